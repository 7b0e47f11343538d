"""The consolidation pull request (docs/children.md#consolidation), on a real
local forge: the children's branches merged into one branch, one pull
request referencing each child's, `final_pr_number` set ("final_pr_number:
Optional[Integer] - Consolidation PR if created"); off by default, where the
children's pull requests merge one by one; a conflict or a merge gate stops
it with the reason; run again, it is opened once."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.demo import create_bare_repository, git
from codex.children.consolidation import consolidate, consolidation_wanted
from codex.children.execute import consolidation_line
from codex.children.models import Child, CompletionAnalysis, FanOut
from codex.configuration.models import Setting
from codex.repositories.local_forge import LocalForge
from codex.repositories.models import LocalPullRequest, Repository
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db(transaction=True)


def push_branch(bare: Path, work: Path, branch: str, files: dict[str, str]) -> None:
    git("checkout", "--quiet", "-B", branch, "origin/main", cwd=work)
    for name, content in files.items():
        (work / name).write_text(content)
    git("add", "--all", cwd=work)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", branch, cwd=work)
    git("push", "--quiet", "origin", f"{branch}:{branch}", cwd=work)


@pytest.fixture
def forge(tmp_path, settings):
    settings.CODEX_MIRROR_ROOT = str(tmp_path / "mirrors")
    bare = create_bare_repository(tmp_path, "app", seed={"README.md": "app\n"})
    work = tmp_path / "work"
    git("clone", "--quiet", str(bare), str(work), cwd=tmp_path)
    repository = Repository.objects.create(url=f"file://{bare}")
    local = LocalForge(repository)
    local.work = work
    return local


def fan_out_with(forge, files_by_child: dict[str, dict[str, str]]):
    """A fan-out of the forge's repository whose children opened a pull
    request each, and an analysis that merges them all (MERGE_ALL)."""
    row = FanOut.objects.start(
        make_task(forge.repository),
        expected_child_count=len(files_by_child),
        by="test",
    )
    numbers = []
    for child_id, files in files_by_child.items():
        branch = f"codex/child-{child_id.lower()}"
        push_branch(forge.bare, forge.work, branch, files)
        pull = forge.create_pull_request(
            head=branch, base="main", title=f"{child_id} work", body=""
        )
        task = put_in_state(
            make_task(forge.repository), pr_url=pull["url"], branch=branch
        )
        Child.objects.create(fan_out=row, child_id=child_id, task=task)
        numbers.append(pull["number"])
    ids = list(files_by_child)
    analysis = CompletionAnalysis.objects.create(
        fan_out=row,
        merge_strategy="MERGE_ALL",
        prs_to_merge=numbers,
        reasoning="every child succeeded",
        decided_by="rule",
        trigger="count",
        successful_children=ids,
        total_children=len(ids),
        successful_count=len(ids),
        failed_count=0,
        partial_count=0,
        expected_child_count=len(ids),
        reporting_count=len(ids),
    )
    return row, analysis, numbers


def test_it_is_off_by_default(forge):
    _, analysis, _ = fan_out_with(forge, {"C1": {"a.py": "a\n"}, "C2": {"b.py": "b\n"}})
    assert not consolidation_wanted(analysis)
    assert "merge one by one" in consolidation_line(analysis)


def test_the_childrens_branches_merge_into_one_pull_request(forge):
    Setting.objects.put("children.consolidation_pr", True, actor="user:alice")
    row, analysis, numbers = fan_out_with(
        forge, {"C1": {"a.py": "a\n"}, "C2": {"b.py": "b\n"}}
    )
    assert consolidation_wanted(analysis)

    number, refused = consolidate(row, analysis, forge)

    assert refused == ""
    analysis.refresh_from_db()
    assert analysis.final_pr_number == number
    final = LocalPullRequest.objects.get(number=number)
    assert final.state == "merged"
    assert final.head == f"codex/{row.parent.task_id}-children"
    assert "C1: #1" in final.body and "C2: #2" in final.body
    for pull in LocalPullRequest.objects.filter(number__in=numbers):
        # Each child's head is in main: its own merge has nothing left to do.
        git("merge-base", "--is-ancestor", pull.head_sha, "main", cwd=forge.bare)
    assert git("show", "main:a.py", cwd=forge.bare) == "a\n"
    assert git("show", "main:b.py", cwd=forge.bare) == "b\n"
    assert f"pull request #{number}" in consolidation_line(analysis)

    # Run again (a carry-out retried): the same pull request, not a second.
    assert consolidate(row, analysis, forge) == (number, "")
    assert LocalPullRequest.objects.count() == 3


def test_a_conflict_stops_it_with_the_reason_and_merges_nothing(forge):
    Setting.objects.put("children.consolidation_pr", True, actor="user:alice")
    row, analysis, _ = fan_out_with(
        forge, {"C1": {"same.py": "one\n"}, "C2": {"same.py": "two\n"}}
    )
    before = git("rev-parse", "main", cwd=forge.bare)

    number, refused = consolidate(row, analysis, forge)

    assert number is None and "not opened" in refused
    assert git("rev-parse", "main", cwd=forge.bare) == before
    assert LocalPullRequest.objects.filter(state="merged").count() == 0


def test_a_merge_gate_leaves_the_consolidation_pull_request_to_a_person(forge):
    Setting.objects.put("children.consolidation_pr", True, actor="user:alice")
    Repository.objects.filter(pk=forge.repository.pk).update(merge_gate="approval")
    forge.repository.refresh_from_db()
    row, analysis, _ = fan_out_with(
        forge, {"C1": {"a.py": "a\n"}, "C2": {"b.py": "b\n"}}
    )
    row.parent.refresh_from_db()

    number, refused = consolidate(row, analysis, forge)

    assert number is not None
    assert f"a person merges the consolidation pull request #{number}" in refused
    assert LocalPullRequest.objects.get(number=number).state == "open"
