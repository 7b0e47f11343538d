"""Scripted conversations a real model produces and a run must survive:
text-only turns spread over a run, malformed tool input, a crashing tool,
thinking blocks, and replies as long as the model's output budget."""

from __future__ import annotations

from agents.budgets import Budget
from agents.runtime import NUDGE, run_agent
from agents.sandbox import Sandbox
from agents.tools import Tool, _schema
from integrations.anthropic.client import effort_for, max_output_tokens, thinking_for
from tests.agents.test_runtime import GOOD, SCHEMA, last_user_blocks
from tests.model_stub import message, submit, thinking, tool_use


def run(client, worktree, tools=None, **kwargs):
    return run_agent(
        client,
        system="You are a test agent.",
        prompt="Do the task.",
        result_schema=SCHEMA,
        tools=tools or Sandbox(worktree, allowed_commands=[]).tools(),
        budget=Budget(),
        model="claude-sonnet-4-6",
        **kwargs,
    )


def test_text_only_turns_spread_over_a_run_are_each_nudged(stub, client, worktree):
    read = tool_use("read_file", {"path": "README.md"})
    stub.add(
        message("Let me think."),
        message(read),
        message("Still thinking."),
        message(tool_use("list_files", {})),
        message("Almost."),
        submit(GOOD),
    )
    outcome = run(client, worktree)
    assert outcome.ok, outcome.reason
    nudges = [
        body["messages"][-1]["content"][-1].get("text") == NUDGE for body in stub.bodies
    ]
    assert nudges == [False, True, False, True, False, True]


def test_malformed_tool_input_is_an_error_the_run_survives(stub, client, worktree):
    stub.add(
        message(
            tool_use("write_file", {"path": "a.py"}),  # no content
            tool_use("read_file", {"path": "README.md", "start_line": "one"}),
            tool_use("read_file", {"path": "README.md", "bogus": 1}),
        ),
        submit(GOOD),
    )
    outcome = run(client, worktree)
    assert outcome.ok
    results = last_user_blocks(stub.bodies[1])
    assert [r.get("is_error") for r in results] == [True, True, True]
    assert "'content' is a required property" in results[0]["content"]
    assert not (worktree / "a.py").exists()


def test_a_tool_that_crashes_becomes_a_tool_error(stub, client, worktree):
    def crash(arguments):
        raise RuntimeError("the database went away")

    broken = Tool("flaky", "Crashes.", _schema({}), crash)
    stub.add(message(tool_use("flaky", {})), submit(GOOD))
    outcome = run(client, worktree, tools=[broken])
    assert outcome.ok
    (result,) = last_user_blocks(stub.bodies[1])
    assert result["is_error"] is True
    assert "RuntimeError: the database went away" in result["content"]
    assert outcome.records[0].success is False


def test_requests_stream_with_the_whole_output_budget_and_thinking(
    stub, client, worktree
):
    stub.add(
        message(thinking("Read first."), tool_use("list_files", {})),
        submit(GOOD),
    )
    outcome = run(client, worktree, thinking={"type": "adaptive"}, effort="high")
    assert outcome.ok
    first = stub.bodies[0]
    assert first["stream"] is True
    assert first["max_tokens"] == max_output_tokens("claude-sonnet-4-6") == 128_000
    assert first["thinking"] == {"type": "adaptive"}
    assert first["output_config"] == {"effort": "high"}
    # The thinking block goes back unchanged, signature and all.
    replayed = stub.bodies[1]["messages"][1]["content"][0]
    assert replayed["type"] == "thinking"
    assert replayed["thinking"] == "Read first."
    assert replayed["signature"] == "stub-signature"


def test_a_long_reply_arrives_whole(stub, client, worktree):
    content = "x = 1\n" * 20_000  # 120k characters in one tool call
    stub.add(
        message(tool_use("write_file", {"path": "big.py", "content": content})),
        submit(GOOD),
    )
    assert run(client, worktree).ok
    assert (worktree / "big.py").read_text() == content


def test_thinking_is_on_for_the_roles_that_plan_write_and_review(settings):
    assert thinking_for("developer") == {"type": "adaptive"}
    assert thinking_for("planner") == {"type": "adaptive"}
    assert thinking_for("reviewer") == {"type": "adaptive"}
    assert thinking_for("release") is None
    settings.CODEX_THINKING_QA = "8000"
    assert thinking_for("qa") == {"type": "enabled", "budget_tokens": 8000}
    settings.CODEX_THINKING_DEVELOPER = "off"
    assert thinking_for("developer") is None
    settings.CODEX_EFFORT_REVIEWER = "max"
    assert effort_for("reviewer") == "max" and effort_for("developer") is None
    assert max_output_tokens("claude-opus-4-1-20250805") == 32_000
    assert max_output_tokens("claude-opus-4-20250514") == 32_000


def test_compaction_drops_old_thinking_and_keeps_the_recent_turns():
    from agents.conversation import compact

    def turn(n):
        return [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"t{n}", "signature": "s"},
                    {"type": "tool_use", "id": f"u{n}", "name": "x", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"u{n}",
                        "content": "y" * 900,
                    }
                ],
            },
        ]

    messages = [{"role": "user", "content": "task"}]
    for n in range(6):
        messages += turn(n)
    assert compact(messages, target_chars=1000, keep_recent=2)
    kinds = [[b["type"] for b in m["content"]] for m in messages[1::2]]
    assert kinds[0] == ["tool_use"]  # old: thinking dropped
    assert kinds[-1] == ["thinking", "tool_use"]  # recent: whole
