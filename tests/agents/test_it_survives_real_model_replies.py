"""The loop against replies real models send: a tool call whose input is not
JSON, a text-only turn that is not the end, the same call again and again, a
conversation the API refuses as too long. Each through the real SDK and a
scripted Messages API."""

from __future__ import annotations

from agents.budgets import Budget
from agents.conversation import NOTES_HEADER
from agents.runtime import NUDGE, Kind, run_agent
from agents.sandbox import Sandbox
from tests.model_stub import error, malformed_tool_use, message, submit, tool_use

SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string", "minLength": 1}},
    "required": ["summary"],
}
DONE = {"summary": "done"}
TOO_LONG = "prompt is too long: 212873 tokens > 200000 maximum"


def run(client, worktree, budget=None):
    return run_agent(
        client,
        system="You are a test agent.",
        prompt="Do the task.",
        result_schema=SCHEMA,
        tools=Sandbox(worktree, allowed_commands=[]).tools(),
        budget=budget or Budget(),
        model="claude-sonnet-4-6",
    )


def tool_results(body):
    return [b for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]


def test_a_tool_call_that_is_not_json_is_answered_and_the_run_goes_on(
    stub, client, worktree
):
    stub.add(
        message(
            "Reading first.",
            tool_use("read_file", {"path": "README.md"}, id="toolu_ok"),
            malformed_tool_use(
                "write_file",
                '{"path": "src/new.py", "content": "x = 1\n"',  # raw newline
                id="toolu_broken",
            ),
        ),
        message(
            tool_use(
                "write_file", {"path": "src/new.py", "content": "x = 1\n"}, id="t2"
            )
        ),
        submit(DONE),
    )

    outcome = run(client, worktree)

    assert outcome.kind == Kind.SUBMITTED, outcome.reason
    answered = {r["tool_use_id"]: r for r in tool_results(stub.bodies[1])}
    # The call before the broken one ran; the broken one ran nothing.
    assert "Hello world" in answered["toolu_ok"]["content"]
    broken = answered["toolu_broken"]
    assert broken["is_error"] is True
    assert "not valid JSON" in broken["content"] and "write_file" in broken["content"]
    # The echoed assistant turn carries the call with an empty input, which
    # the API accepts.
    echoed = stub.bodies[1]["messages"][1]["content"]
    assert [b for b in echoed if b.get("id") == "toolu_broken"][0]["input"] == {}
    assert (worktree / "src" / "new.py").read_text() == "x = 1\n"


def test_a_text_turn_is_told_to_go_on_with_tools_not_to_submit_at_once(
    stub, client, worktree
):
    stub.add(
        message("Let me look at the code first."),
        message(tool_use("read_file", {"path": "src/app.py"})),
        submit(DONE),
    )

    outcome = run(client, worktree)

    assert outcome.kind == Kind.SUBMITTED
    nudge = stub.bodies[1]["messages"][-1]["content"][-1]["text"]
    assert nudge == NUDGE
    assert "continue with your tools" in nudge and "now" not in nudge


def test_the_same_call_with_the_same_result_is_noted_then_ends_the_run(
    stub, client, worktree
):
    same = [message(tool_use("read_file", {"path": "README.md"})) for _ in range(8)]
    stub.add(*same, submit(DONE))

    outcome = run(client, worktree, Budget(repeat_note_at=3, repeat_limit=5))

    assert outcome.kind == Kind.STUCK
    assert "5 times" in outcome.reason
    assert 'read_file {"path": "README.md"}' in outcome.reason
    # The third answer carried the note; the run stopped at the fifth call.
    assert len(stub.bodies) == 5
    assert "Note from Codex" not in tool_results(stub.bodies[2])[0]["content"]
    assert "Note from Codex" in tool_results(stub.bodies[3])[0]["content"]
    escalation = outcome.phase_result()
    assert escalation.outcome == "escalate" and "read_file" in escalation.reason


def test_running_the_tests_again_after_an_edit_is_not_a_repeat(stub, client, worktree):
    read = tool_use("read_file", {"path": "src/app.py"})
    for count in range(6):
        edit = tool_use(
            "write_file", {"path": "notes.txt", "content": f"attempt {count}\n"}
        )
        stub.add(message(tool_use("read_file", {"path": "src/app.py"})), message(edit))
    stub.add(message(read), submit(DONE))

    outcome = run(client, worktree, Budget(repeat_note_at=2, repeat_limit=3))

    assert outcome.kind == Kind.SUBMITTED, outcome.reason


def test_a_prompt_too_long_is_compacted_with_notes_and_sent_again(
    stub, client, worktree
):
    (worktree / "big.txt").write_text("line of text\n" * 4000)
    reads = [
        message(f"Reading part {n}.", tool_use("read_file", {"path": "big.txt"}))
        for n in range(4)
    ]
    stub.add(
        *reads,
        error(400, TOO_LONG),
        submit(DONE),
    )

    outcome = run(client, worktree, Budget(keep_recent_turns=1))

    assert outcome.kind == Kind.SUBMITTED, outcome.reason
    refused, retried = stub.bodies[4], stub.bodies[5]
    assert len(str(retried["messages"])) < len(str(refused["messages"])) / 2
    first = retried["messages"][0]["content"]
    notes = [b["text"] for b in first if NOTES_HEADER in b.get("text", "")]
    # What the dropped turns did is kept: the calls, and the agent's words.
    assert notes and 'read_file {"path": "big.txt"}' in notes[0]
    assert "you wrote: Reading part 0." in notes[0]


def test_a_second_refusal_in_a_row_ends_the_run_as_an_overflow(stub, client, worktree):
    stub.add(
        message(tool_use("read_file", {"path": "README.md"})),
        error(400, TOO_LONG),
        error(400, TOO_LONG),
    )

    outcome = run(client, worktree, Budget(keep_recent_turns=0))

    assert outcome.kind == Kind.CONTEXT_OVERFLOW
    assert "prompt is too long" in outcome.reason
