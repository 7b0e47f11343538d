# ruff: noqa: F811 (pytest fixtures are imported, then named as arguments)
"""GitHub faults during a task's steps, through the pipeline.

Each test runs a task from GitHub issue #1 through advance_task with the real
AgentPhaseRunner (tests/fault/pipeline_harness.py), while FakeGitHub answers
one of the phase's GitHub calls with a fault. What a demanding user expects:
the task waits when GitHub says so and then completes, no write (pull request,
merge, comment) ever happens twice, a deleted issue ends the work with its
claim released, and a revoked token is replaced or stops the task at once.
"""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from agents.demo import git
from codex.claims.models import ClaimState, IssueClaim
from codex.configuration.models.credential import ActiveCredential
from codex.core.errors import Action, make_error
from codex.core.store.side_effects import SideEffect
from codex.tasks.jobs import advance_task, clean_up_task
from codex.tasks.models import Escalation, Status, Task
from codex.tasks.runners import PhaseResult

# The fixtures: the bare remote, the model stub, the fake GitHub, the task.
from tests.agents_e2e.conftest import agent_settings, bare_repo, stub  # noqa: F401
from tests.factories import make_task
from tests.fault.github_fake import BAD_GATEWAY, DELETED
from tests.fault.pipeline_harness import agents, claimed_task, github, github_env  # noqa: F401
from tests.fault.pipeline_steps import (
    ISSUE,
    MUL,
    TOKENS,
    run_to_the_end,
    step,
)
from tests.integrations.github.payloads import rate_limited

pytestmark = pytest.mark.django_db(transaction=True)

CREATE_PR = ("POST", r"/pulls$")
MERGE = ("PUT", r"/pulls/\d+/merge$")
COMMENT = ("POST", rf"/issues/{ISSUE}/comments$")
ONE_OF_EACH = {
    "create_pull": 1,
    "mark_ready": 1,
    "merge": 1,
    "comment": 1,
    "close_issue": 1,
}


def step_until_stopped(task: Task) -> list[str]:
    """advance_task until the task is no longer pending or in progress."""
    outcomes = []
    while task.status in (Status.PENDING, Status.IN_PROGRESS) and len(outcomes) < 10:
        outcomes.append(step(task))
    return outcomes


def seconds_blocked(task: Task) -> float:
    """How long the step decided to wait: from the error it recorded to the
    retry time it set (both written in the same step, no clock race)."""
    failed_at = datetime.fromisoformat(task.errors[-1]["timestamp"])
    return (task.blocked_until - failed_at).total_seconds()


def assert_merged_once(github, task: Task, bare) -> None:
    assert task.status == Status.COMPLETED, (task.status, task.errors)
    assert github.writes == ONE_OF_EACH
    assert git("show", "main:calc.py", cwd=bare) == MUL
    assert [c["body"].split("\n")[0] for c in github.comments[ISSUE]] == [
        f"Done in {task.pr_url}"
    ]
    assert github.issue_state[ISSUE] == "closed"


def primary_limit() -> dict[str, str]:
    return {
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": "0",
        "x-ratelimit-used": "5000",
        "x-ratelimit-resource": "core",
        "x-ratelimit-reset": str(int(time.time()) + 120),
    }


RATE_LIMITS = {
    "primary 403 on opening the pull request": (
        CREATE_PR,
        403,
        primary_limit,
        "primary",
        "implementation",
        120,
    ),
    "secondary 403 with retry-after on the merge": (
        MERGE,
        403,
        lambda: {"retry-after": "60"},
        "secondary",
        "release",
        60,
    ),
    "secondary 429 with retry-after on the issue comment": (
        COMMENT,
        429,
        lambda: {"retry-after": "90"},
        "secondary",
        "release",
        90,
    ),
}


@pytest.mark.parametrize(
    ("call", "status", "headers", "kind", "phase", "wait"),
    list(RATE_LIMITS.values()),
    ids=list(RATE_LIMITS),
)
def test_a_rate_limit_waits_the_time_github_gives_then_the_task_completes(
    github, agents, claimed_task, bare_repo, call, status, headers, kind, phase, wait
):
    task = claimed_task
    github.fault(*call, status, rate_limited(kind), headers=headers)

    step_until_stopped(task)

    # The step waits (blocked, not failed, not escalated) for GitHub's time.
    assert task.status == Status.BLOCKED and task.phase == phase
    assert wait - 5 <= seconds_blocked(task) <= wait + 1
    assert task.errors[-1]["code"] == "wait_retry"
    assert "Rate limited" in task.errors[-1]["message"]
    assert github.requests_to(*call) == 1
    # Once the time has come the task goes on and completes, each write once.
    run_to_the_end(task)
    assert github.requests_to(*call) == 2
    assert_merged_once(github, task, bare_repo)


BAD_GATEWAYS = {
    "opening the pull request": (CREATE_PR, "implementation", "pr:create:"),
    "merging": (MERGE, "release", None),
    "commenting on the issue": (COMMENT, "release", "issue:done-comment:"),
}


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
@pytest.mark.parametrize(
    ("call", "phase", "key"), list(BAD_GATEWAYS.values()), ids=list(BAD_GATEWAYS)
)
def test_a_502_on_a_write_is_retried_and_never_done_twice(
    github, agents, claimed_task, bare_repo, call, phase, key, applied
):
    """A 502 may come after GitHub applied the write (a proxy lost the answer):
    the retry looks before writing again (perform_once's lookup)."""
    task = claimed_task
    github.fault(*call, 502, BAD_GATEWAY, after_applying=applied)

    step_until_stopped(task)

    assert task.status == Status.BLOCKED and task.phase == phase
    assert task.errors[-1]["code"] == "wait_retry"
    assert "502" in task.errors[-1]["message"]
    run_to_the_end(task)
    assert_merged_once(github, task, bare_repo)
    # What was applied is found, not repeated; what was not is done on retry.
    assert github.requests_to(*call) == (1 if applied else 2)
    if key is not None:
        effect = SideEffect.objects.get(key__startswith=key)
        assert effect.found_by_lookup is applied and effect.attempts == 1 + (
            not applied
        )


@pytest.mark.parametrize(
    ("role", "phase"),
    [("commit_message", "implementation"), ("merge", "release")],
    ids=["while-implementing", "while-releasing"],
)
@pytest.mark.parametrize("status", [410, 404])
def test_a_deleted_source_issue_fails_the_task_naming_it_and_releases_the_claim(
    github, agents, claimed_task, bare_repo, status, role, phase
):
    task = claimed_task
    # Deleted on GitHub while the phase's agent was at work.
    agents.hooks[role] = lambda: github.deleted.update({ISSUE: status})

    step_until_stopped(task)

    assert task.status == Status.FAILED and task.phase == phase
    reason = task.errors[-1]["message"]
    assert f"source issue #{ISSUE} is gone" in reason
    assert f"issue #{ISSUE} of Codertocat/Hello-World was deleted" in reason
    assert task.events.filter(kind="transition", target="failed").get().reason == (
        reason
    )
    # Nothing is opened or merged for a withdrawn request; the pushed work stays.
    opened = 1 if phase == "release" else 0
    assert github.writes["create_pull"] == opened
    assert github.writes["merge"] == 0 and github.writes["comment"] == 0
    assert "mul" not in git("show", "main:calc.py", cwd=bare_repo)
    assert "mul" in git("show", f"codex/{task.task_id}:calc.py", cwd=bare_repo)
    # The claim is let go for good: no failure counted, never claimed again.
    claim = IssueClaim.objects.get(number=ISSUE)
    assert claim.state == ClaimState.RELEASED and claim.issue_closed
    assert claim.failure_count == 0
    assert not IssueClaim.objects.claimable().exists()
    clean_up_task(task.task_id)  # the task's end leaves the claim as it is
    claim.refresh_from_db()
    assert claim.state == ClaimState.RELEASED and claim.failure_count == 0


def test_an_issue_deleted_after_the_merge_leaves_the_task_completed(
    github, agents, claimed_task, bare_repo
):
    """The merge stands: there is only nothing left to comment on or close."""
    task = claimed_task
    github.fault(*COMMENT, 410, DELETED)

    step_until_stopped(task)

    assert task.status == Status.COMPLETED, task.errors
    assert github.writes["merge"] == 1 and github.writes["close_issue"] == 0
    assert git("show", "main:calc.py", cwd=bare_repo) == MUL
    assert task.events.filter(reason__startswith="nothing to close: issue #1").exists()
    clean_up_task(task.task_id)
    claim = IssueClaim.objects.get(number=ISSUE)
    assert claim.state == ClaimState.RELEASED and claim.issue_closed


def test_a_revoked_token_rotates_to_the_next_and_the_task_completes(
    github, agents, claimed_task, bare_repo
):
    task = claimed_task
    github.revoked.add(TOKENS[0])

    run_to_the_end(task)

    assert_merged_once(github, task, bare_repo)
    rotated = [e for e in task.errors if e["code"] == "rotate_token"]
    assert len(rotated) == 1 and "Bad credentials" in rotated[0]["message"]
    assert rotated[0]["resolution"] == "retrying with the next credential"
    assert ActiveCredential.objects.get(source="github").index == 1
    # After the one refusal, every request used the second token.
    assert github.tokens.count(TOKENS[0]) == 1
    assert set(github.tokens[github.tokens.index(TOKENS[0]) + 1 :]) == {TOKENS[1]}


@pytest.mark.parametrize("configured", [1, 2], ids=["one-token", "all-revoked"])
def test_a_revoked_token_with_no_other_stops_the_task_with_the_reason(
    github, agents, claimed_task, github_env, configured
):
    """No retry loop: one refusal per configured token, then a person."""
    github_env.CODEX_CREDENTIALS = {"claude": ["k"], "github": TOKENS[:configured]}
    github.revoked.update(TOKENS)
    task = claimed_task

    step_until_stopped(task)

    assert task.status == Status.ESCALATED and task.phase == "implementation"
    reason = Escalation.objects.get(task=task).detail
    assert "Bad credentials" in reason
    expected = (
        "no other github credential to rotate to"
        if configured == 1
        else "every configured github credential was rejected"
    )
    assert expected in reason
    assert len(github.requests) == configured
    assert github.writes == {}
    assert task.blocked_until is None


def test_a_refused_github_app_token_is_retried_once_with_a_new_one(
    github_env, scripted_runner
):
    """As a GitHub App there is no list to rotate through: the client forgot
    the refused installation token, so one retry mints a new one; a second
    refusal in the phase goes to a person."""
    github_env.GITHUB_APP_ID = "12345"
    github_env.GITHUB_APP_PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----"
    github_env.GITHUB_APP_INSTALLATION_ID = "678"
    github_env.CODEX_CREDENTIALS = {"claude": ["k"], "github": []}
    task = make_task(issue_number=None)
    for _ in range(2):
        advance_task(task.task_id)
    refused = PhaseResult.from_error(
        make_error("github", 401, Action.ROTATE_TOKEN, "Bad credentials")
    )
    scripted_runner.queue("implementation", refused, refused)

    advance_task(task.task_id)
    task.refresh_from_db()
    assert task.status == Status.IN_PROGRESS, task.errors

    advance_task(task.task_id)
    task.refresh_from_db()
    assert task.status == Status.ESCALATED
    assert "a new GitHub App installation token was refused too" in (
        Escalation.objects.get(task=task).detail
    )
