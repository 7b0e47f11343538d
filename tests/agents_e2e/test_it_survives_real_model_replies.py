"""Whole tasks on the local forge against replies real models send: a person's
answer reaches the agent that asked, a broken tool call does not park the
task, a model going round in circles escalates naming the call, a shell-made
test file can be kept, and a run whose worker died resumes its conversation."""

from __future__ import annotations

import pytest

from agents.demo import git
from codex.fleet.models import RunCheckpoint
from codex.repositories.models import Repository
from codex.tasks.jobs import advance_task
from codex.tasks.models import AgentQuestion
from codex.webhooks.commands import parse_command, run_command
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    QA_APPROVE,
    RELEASE,
    REVIEW_APPROVE,
    TEST_MUL,
    implementation,
    intake_and_planning,
    steps,
)
from tests.factories import make_task, put_in_state
from tests.model_stub import malformed_tool_use, message, submit, tool_use

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "Should mul accept floats as well as ints?"
ANSWER = "Yes: floats too, and return a float when either is one."
DONE = {"summary": "Added mul.", "commit_message": "Add mul", "tasks_completed": 1}


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def requests_text(stub, start):
    return [str(body["messages"]) for body in stub.bodies[start:]]


def asking_developer():
    return [
        message(tool_use("ask_question", {"to": "human", "question": QUESTION})),
        submit({**DONE, "tasks_completed": 0}),
    ]


@pytest.mark.parametrize("through", ["inbox", "comment"])
def test_a_persons_answer_reaches_the_developer_that_asked(
    agent_settings, stub, repository, operator, through
):
    stub.add(*intake_and_planning(), *asking_developer())
    task = make_task(repository, title="Add multiplication", issue_number=3)
    assert steps(task, 3)[-1] == "escalated/implementation"
    escalation = task.escalations.get()
    assert escalation.questions == [QUESTION]
    before = len(stub.bodies)

    if through == "inbox":
        task.resolve_escalation(
            escalation, decision="resume", by="alice", answers=[ANSWER], user=operator
        )
    else:
        reply = run_command(parse_command(f"@codex answer {ANSWER}"), task, by="bob")
        assert "continues with your answer" in reply
    stub.add(*implementation(MUL_OK))
    assert advance_task(task.task_id) == "in_progress/verification"

    first = stub.bodies[before]["messages"][0]["content"][0]["text"]
    assert ANSWER in first and QUESTION in first
    # Fenced as a person's words, and said to be theirs.
    assert "<human_input from=" in first and "a person was asked" in first
    delivered = task.events.get(data__escalations=[escalation.pk])
    assert delivered.actor == "agent:developer"
    assert "handed to the developer" in delivered.reason
    question = AgentQuestion.objects.get(task=task, to_role="human")
    assert question.answer == ANSWER and question.answered
    escalation.refresh_from_db()
    assert escalation.delivered_at is not None


def test_a_tool_call_that_is_not_json_ends_in_a_merged_task(
    agent_settings, stub, repository
):
    stub.add(
        *intake_and_planning(),
        message(
            malformed_tool_use(
                "write_file", '{"path": "calc.py", "content": "def mul(a, b):\n'
            )
        ),
        *implementation(MUL_OK),
        QA_APPROVE,
        REVIEW_APPROVE,
        RELEASE,
    )
    task = make_task(repository, title="Add multiplication")

    results = steps(task, 6)

    assert results[-1] == "completed/release", results
    answered = stub.bodies[4]["messages"][-1]["content"][0]
    assert answered["is_error"] and "not valid JSON" in answered["content"]
    assert git("show", "main:calc.py", cwd=repository.local_path) == MUL_OK


def test_the_same_call_again_and_again_escalates_naming_it(
    agent_settings, stub, repository
):
    agent_settings.CODEX_AGENT_REPEAT_LIMIT = 5
    loop = [message(tool_use("read_file", {"path": "calc.py"})) for _ in range(5)]
    stub.add(*intake_and_planning(), *loop)
    task = make_task(repository, title="Add multiplication")

    assert steps(task, 3)[-1] == "escalated/implementation"
    detail = task.escalations.get().detail
    assert "same call 5 times" in detail and 'read_file {"path": "calc.py"}' in detail


def test_a_test_file_written_through_the_shell_is_kept_when_asked(
    agent_settings, stub, repository
):
    stub.add(
        *intake_and_planning(),
        message(
            tool_use("write_file", {"path": "calc.py", "content": MUL_OK}),
            tool_use(
                "bash",
                {"command": f"cat > test_mul.py <<'E'\n{TEST_MUL}E\necho x > s.txt"},
            ),
        ),
        submit(DONE),
        submit({**DONE, "keep_files": ["test_mul.py"]}),
    )
    task = make_task(repository, title="Add multiplication")

    assert steps(task, 3)[-1] == "in_progress/verification"
    task.refresh_from_db()
    shipped = git(
        "show", "--name-only", "--format=", task.branch, cwd=repository.local_path
    )
    assert set(shipped.split()) == {"calc.py", "test_mul.py"}
    assert git("show", f"{task.branch}:test_mul.py", cwd=repository.local_path) == (
        TEST_MUL
    )
    dropped = task.events.get(data__tool="drop_scratch")
    assert dropped.data["files"] == ["s.txt"]


class WorkerKilled(BaseException):
    """The worker's process ends here: nothing after it runs (not even the
    step's error handling, which catches Exception)."""


def test_a_run_whose_worker_died_resumes_with_its_earlier_turns(
    agent_settings, stub, repository, monkeypatch
):
    stub.add(
        *intake_and_planning(),
        message(
            "Writing mul first.",
            tool_use("write_file", {"path": "calc.py", "content": MUL_OK}),
        ),
        message(tool_use("list_files", {}, id="toolu_dies_here")),
    )
    task = make_task(repository, title="Add multiplication")
    assert steps(task, 2)[-1] == "in_progress/implementation"

    from agents.phase_runner import AgentPhaseRunner

    recorded = AgentPhaseRunner._record_tool

    def dies_at_list_files(task, role, record):
        if record.tool == "list_files":
            raise WorkerKilled
        recorded(task, role, record)

    monkeypatch.setattr(
        AgentPhaseRunner, "_record_tool", staticmethod(dies_at_list_files)
    )
    with pytest.raises(WorkerKilled):
        advance_task(task.task_id)
    checkpoint = RunCheckpoint.objects.get(task=task, role="developer")
    assert checkpoint.turns == 1 and checkpoint.files_written == ["calc.py"]

    # Another worker takes the task once the dead one's lease runs out.
    monkeypatch.setattr(AgentPhaseRunner, "_record_tool", staticmethod(recorded))
    put_in_state(task, lease_holder=None, lease_expires_at=None)
    before = len(stub.bodies)
    stub.add(
        message(tool_use("write_file", {"path": "test_mul.py", "content": TEST_MUL})),
        submit(DONE),
    )
    assert advance_task(task.task_id) == "in_progress/verification"

    resumed = stub.bodies[before]["messages"]
    # The first request of the new run carries the earlier turns.
    assert "Writing mul first." in str(resumed[1]) and "write_file" in str(resumed[1])
    assert "resumes here" in str(resumed[-1]) and "The worktree is as it was" in str(
        resumed[-1]
    )
    assert not RunCheckpoint.objects.filter(task=task).exists()
    task.refresh_from_db()
    shipped = git(
        "show", "--name-only", "--format=", task.branch, cwd=repository.local_path
    )
    # The file written before the death ships: the checkpoint kept its name.
    assert set(shipped.split()) == {"calc.py", "test_mul.py"}


def test_a_wait_the_model_asked_for_outlives_the_worker_that_waited(
    agent_settings, stub, repository, monkeypatch
):
    from agents import phase_runner
    from tests.model_stub import error

    stub.add(*intake_and_planning(), error(429, "slow down", retry_after=20))
    task = make_task(repository, title="Add multiplication")
    assert steps(task, 2)[-1] == "in_progress/implementation"

    def dies(seconds):
        raise WorkerKilled

    real = phase_runner.run_agent
    monkeypatch.setattr(
        phase_runner, "run_agent", lambda *a, **k: real(*a, sleep=dies, **k)
    )
    with pytest.raises(WorkerKilled):
        advance_task(task.task_id)
    sent = len(stub.bodies)

    put_in_state(task, lease_holder=None, lease_expires_at=None)
    assert advance_task(task.task_id) == "blocked/implementation"

    task.refresh_from_db()
    assert len(stub.bodies) == sent  # nothing sent before the wait is over
    assert "the model asked to wait" in task.errors[-1]["message"]
    waited = (task.blocked_until - task.updated_at).total_seconds()
    assert 18 <= waited <= 25


def test_a_run_keeps_its_checkpoint_while_it_works_and_none_once_done(
    agent_settings, stub, repository, monkeypatch
):
    # As real models do: a tool call whose input is not JSON, a turn of text
    # only, then the work and the result. Each complete turn with tools is
    # saved; the run that submitted leaves no checkpoint behind.
    from agents import checkpoints

    saved_turns = []
    save = checkpoints.Saver.__call__

    def kept(self, *args, **kwargs):
        save(self, *args, **kwargs)
        row = RunCheckpoint.objects.get(task=self.task, role=self.role)
        saved_turns.append(row.turns)

    monkeypatch.setattr(checkpoints.Saver, "__call__", kept)
    stub.add(
        *intake_and_planning(),
        message(malformed_tool_use("write_file", '{"path": "calc.py", "con')),
        message("Let me look at the module before writing it."),
        *implementation(MUL_OK),
    )
    task = make_task(repository, title="Add multiplication")
    assert steps(task, 3)[-1] == "in_progress/verification"
    assert saved_turns and saved_turns == sorted(saved_turns), saved_turns
    assert not RunCheckpoint.objects.filter(task=task).exists()
