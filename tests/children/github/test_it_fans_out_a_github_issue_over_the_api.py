"""A GitHub issue listing its children, end to end over GitHub's REST API
(mocked with `responses`, GitHub's own payload shapes): the `issues` webhook
stores the body as the task's description; the task's first step fans out
(a child issue each, linked as a sub-issue of the parent's); each child
reports with a comment on the parent issue; the analysis merges the pull
requests in order at their heads, posts itself and closes the parent issue
(docs/children.md)."""

from __future__ import annotations

import json

import pytest
from responses import matchers

from codex.children.flow import held_step
from codex.children.jobs import carry_out_analysis, report_child
from codex.children.models import Child, FanOut
from codex.tasks.models import Task
from codex.webhooks.jobs import process_delivery
from codex.webhooks.models import WebhookDelivery
from codex.webhooks.signature import sign
from tests.factories import put_in_state
from tests.integrations.github.payloads import REPO_API, comment, issue, pull_request
from tests.webhooks.conftest import load

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "test-webhook-secret"
BODY = (
    "Two functions.\r\n\r\n## Children\r\n- [ ] C1: Add sub(a, b)\r\n"
    "  sub.py and its test.\r\n- [ ] C2: Add mul(a, b)\r\n"
)


@pytest.fixture
def webhook(settings, client):
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    settings.CODEX_TRIGGER_LABEL = "codex"
    settings.CODEX_CHILDREN_ANALYST = "tests.children.harness.no_model"

    def deliver(event: str, payload: dict) -> str:
        body = json.dumps(payload).encode()
        client.post(
            "/api/webhooks/github/",
            data=body,
            content_type="application/json",
            HTTP_X_GITHUB_EVENT=event,
            HTTP_X_GITHUB_DELIVERY=f"delivery-{event}",
            HTTP_X_HUB_SIGNATURE_256=sign(body, SECRET),
        )
        return process_delivery(WebhookDelivery.objects.latest("pk").pk)

    return deliver


@pytest.fixture
def jobs(monkeypatch):
    """Jobs are recorded, not run: the test runs the ones it means."""
    calls: list[tuple] = []
    monkeypatch.setattr(
        "django_q.tasks.async_task",
        lambda func, *args, **kwargs: calls.append((func, *args)),
    )
    return calls


def created_issue(number: int, node: int) -> dict:
    found = issue(number, title=f"C{number - 10}")
    found["id"] = node
    return found


def test_an_issue_listing_children_fans_out_and_merges_on_github(
    github, repository, webhook, jobs
):
    payload = load("issues", "labeled.payload.json")
    payload["label"]["name"] = "codex"
    payload["issue"]["labels"].append({"name": "codex"})
    payload["issue"]["body"] = BODY
    github.get(
        f"{REPO_API}/collaborators/Codertocat/permission",
        json={"permission": "admin", "role_name": "admin"},
    )
    webhook("issues", payload)
    parent = Task.objects.get()
    assert parent.description == BODY  # the body, as GitHub sent it
    assert parent.issue_number == 1

    # The first step fans out on the issue itself: one issue per child,
    # each a sub-issue of #1.
    for number, node in ((11, 9011), (12, 9012)):
        github.post(f"{REPO_API}/issues", json=created_issue(number, node), status=201)
        github.post(
            f"{REPO_API}/issues/1/sub_issues",
            json=created_issue(number, node),
            status=201,
            match=[matchers.json_params_matcher({"sub_issue_id": node})],
        )
    put_in_state(parent, status="in_progress", phase="intake")
    assert held_step(parent, by="worker:test").startswith("waiting for 2 children")
    fan_out = FanOut.objects.get(parent=parent)
    assert fan_out.issue_number == 1 and fan_out.state == "awaiting_completions"
    children = list(Child.objects.filter(fan_out=fan_out).select_related("task"))
    assert [c.task.issue_number for c in children] == [11, 12]
    posted = [
        json.loads(c.request.body) for c in github.calls if c.request.method == "POST"
    ]
    assert posted[0]["title"] == "C1: Add sub(a, b)"
    assert "Child C1 of #1." in posted[0]["body"]

    # Each child reaches release with its pull request and reports on #1.
    for n, child in enumerate(children, start=1):
        text = f"🤖 Child C{n} complete: PR #{n + 20} ready for review"
        github.post(
            f"{REPO_API}/issues/1/comments",
            json=comment(700 + n, text),
            status=201,
        )
        put_in_state(
            child.task,
            status="in_progress",
            phase="release",
            pr_url=f"https://github.com/Codertocat/Hello-World/pull/{n + 20}",
        )
    report_child(children[0].task.task_id)
    fan_out.refresh_from_db()
    assert fan_out.state == "awaiting_completions"
    report_child(children[1].task.task_id)
    fan_out.refresh_from_db()
    assert fan_out.state == "complete"
    assert fan_out.analysis.merge_strategy == "MERGE_ALL"
    assert ("codex.children.jobs.carry_out_analysis", fan_out.pk) in jobs

    # The carry-out: #21 then #22 merged at their heads, the analysis posted,
    # the parent issue closed.
    for number in (21, 22):
        sha = f"{number:040x}"
        github.get(
            f"{REPO_API}/pulls/{number}",
            json=pull_request(number, head=f"codex/c{number}", sha=sha),
        )
        github.put(
            f"{REPO_API}/pulls/{number}/merge",
            json={"sha": sha, "merged": True, "message": "Pull Request merged"},
            match=[
                matchers.json_params_matcher({"sha": sha, "merge_method": "squash"})
            ],
        )
        github.get(
            f"{REPO_API}/pulls/{number}",
            json=pull_request(number, merged=True, sha=sha),
        )
    github.post(
        f"{REPO_API}/issues/1/comments",
        json=comment(800, "## Completion analysis: MERGE_ALL"),
        status=201,
    )
    github.patch(
        f"{REPO_API}/issues/1",
        json=issue(1, state="closed"),
        match=[
            matchers.json_params_matcher(
                {"state": "closed", "state_reason": "completed"}
            )
        ],
    )
    outcome = carry_out_analysis(fan_out.pk)
    assert outcome["merged"] == [21, 22]
    assert outcome["parent"] == "completed"
    merges = [c.request.url for c in github.calls if c.request.method == "PUT"]
    assert merges == [f"{REPO_API}/pulls/21/merge", f"{REPO_API}/pulls/22/merge"]
    analysis = json.loads(
        [
            c
            for c in github.calls
            if c.request.method == "POST" and c.request.url.endswith("/comments")
        ][-1].request.body
    )["body"]
    assert analysis.startswith("## Completion analysis: MERGE_ALL")
    assert "Merged: #21, #22." in analysis

    # Carrying it out again only reads: nothing merged, posted or closed twice.
    before = len(github.calls)
    assert carry_out_analysis(fan_out.pk)["parent"] == "completed"
    assert {c.request.method for c in github.calls[before:]} <= {"GET"}
