"""`manage.py demo --scenario fanout`: a parent request split by the planner
into two children whose pull requests merge (spec 001: "Child agents per
parent: 1-5"; "IF all children successful: → MERGE_ALL"), through one
consolidation pull request ("final_pr_number: Optional[Integer] -
Consolidation PR if created"), each child's runs recording the issue they
worked ("issues_worked | array[integer] | Yes | Issue numbers attempted"),
and every export in its format."""

from __future__ import annotations

from io import StringIO

import pytest
import yaml
from django.core.management import call_command

from agents.demo import git
from agents.demo_fanout import MUL, SUB
from codex.children.models import Child, FanOut
from codex.fleet.models import AgentRun
from codex.repositories.models import LocalComment, LocalPullRequest
from codex.tasks.exports import issue_state, report_yaml, task_envelope_yaml
from codex.tasks.models import Task
from tests.tasks.export_formats import (
    ISSUE_STATE,
    REVIEW_REPORT,
    TASK_ENVELOPE,
    VERIFICATION_REPORT,
    shape_errors,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_fanout_demo_merges_both_childrens_pull_requests(tmp_path):
    out = StringIO()
    call_command("demo", root=tmp_path / "demo", scenario="fanout", stdout=out)
    output = out.getvalue()

    fan_out = FanOut.objects.get()
    parent = fan_out.parent
    assert parent.status == "completed" and fan_out.state == "complete"
    children = list(Child.objects.filter(fan_out=fan_out).order_by("child_id"))
    assert [c.child_id for c in children] == ["C1", "C2"]
    # Children are tasks of their own, each with its own branch and PR.
    assert len({c.task.branch for c in children}) == 2
    assert all(c.task.status == "completed" for c in children)
    assert Task.objects.count() == 3
    analysis = fan_out.analysis
    assert analysis.merge_strategy == "MERGE_ALL"
    assert analysis.decided_by == "model"
    # One consolidation pull request merged both children's branches; the
    # children's own pull requests are merged with it.
    final = LocalPullRequest.objects.get(number=analysis.final_pr_number)
    assert final.state == "merged" and final.head.endswith("-children")
    child_prs = sorted(int(c.task.pr_url.rsplit("/", 1)[1]) for c in children)
    assert analysis.prs_to_merge == child_prs
    assert all(f"#{n}" in final.body for n in child_prs)
    assert LocalPullRequest.objects.filter(state="merged").count() == 3
    bare = tmp_path / "demo" / "fanout.git"
    assert git("show", "main:sub.py", cwd=bare) == SUB
    assert git("show", "main:mul.py", cwd=bare) == MUL
    for child in children:  # each child's head is in main
        head = LocalPullRequest.objects.get(head=child.task.branch).head_sha
        git("merge-base", "--is-ancestor", head, "main", cwd=bare)
    # The consolidation decision is shown, and posted with the analysis.
    assert f"Consolidation: pull request #{final.number}" in output
    assert f"final_pr_number: {final.number}" in output
    # Children on the local forge work on issues of their own, recorded.
    for child in children:
        issue = child.task.issue_number
        assert issue and issue != fan_out.issue_number
        runs = AgentRun.objects.filter(task=child.task)
        assert runs and all(run.issues_worked == [issue] for run in runs)
    # Every export of the scenario is in its format, key by key.
    for task in (parent, *(c.task for c in children)):
        assert shape_errors(issue_state(task), ISSUE_STATE) == [], task
        envelope = yaml.safe_load(task_envelope_yaml(task))
        assert shape_errors(envelope, TASK_ENVELOPE) == [], task
    for child in children:
        state = issue_state(child.task)
        assert state["pipeline"]["attempt"] <= state["pipeline"]["max_attempts"] == 3
        for report in child.task.verification_reports.all():
            exported = yaml.safe_load(report_yaml(report))
            assert shape_errors(exported, VERIFICATION_REPORT) == []
        for report in child.task.review_reports.all():
            exported = yaml.safe_load(report_yaml(report))
            assert shape_errors(exported, REVIEW_REPORT) == []
            assert exported["security"]["vulnerabilities_found"] == 0
    # Spec 001: "comment_body must contain "🤖 Child"" — one report per child,
    # then the analysis "Posted as issue comments".
    bodies = list(
        LocalComment.objects.filter(issue__number=fan_out.issue_number)
        .order_by("id")
        .values_list("body", flat=True)
    )
    reports = [b for b in bodies if b.startswith("🤖 Child")]
    assert len(reports) == 2 and all("complete: PR #" in b for b in reports)
    assert any("Completion analysis: MERGE_ALL" in b for b in bodies)
    assert any(f"Consolidation: pull request #{final.number}" in b for b in bodies)
    assert "Demo done: the children's changes are merged." in output
