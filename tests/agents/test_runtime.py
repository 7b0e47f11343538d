"""The tool-use loop through the real SDK against scripted conversations."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.budgets import Budget
from agents.conversation import STUB, validate
from agents.runtime import CONTINUE, NUDGE, WRAP_UP, Kind, run_agent
from agents.sandbox import Sandbox
from codex.core.errors import Action
from tests.model_stub import error, message, submit, tool_use

SCHEMA = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "minLength": 1},
        "files": {"type": "array", "items": {"type": "string"}},
        "should_proceed": {"type": "boolean"},
    },
    "required": ["summary", "should_proceed"],
    "additionalProperties": False,
}
GOOD = {"summary": "done", "files": ["src/app.py"], "should_proceed": True}


def run(client, worktree, budget=None, **kwargs):
    return run_agent(
        client,
        system="You are a test agent.",
        prompt="Do the task.",
        result_schema=SCHEMA,
        tools=Sandbox(worktree, allowed_commands=[]).tools(),
        budget=budget or Budget(),
        model="claude-sonnet-4-6",
        **kwargs,
    )


def last_user_blocks(body):
    return body["messages"][-1]["content"]


def test_two_turn_tool_use_ending_in_submit_result(stub, client, worktree):
    read = tool_use("read_file", {"path": "src/app.py"}, id="toolu_read")
    stub.add(
        message("Let me look.", read),
        message(
            tool_use(
                "edit_file",
                {"path": "src/app.py", "old": "'hello'", "new": "'hi'"},
                id="toolu_edit",
            )
        ),
        submit(GOOD, "All done."),
    )
    seen = []

    outcome = run(client, worktree, on_tool=seen.append)

    assert outcome.ok, outcome.reason
    assert outcome.result == GOOD
    assert (worktree / "src/app.py").read_text() == "def greet():\n    return 'hi'\n"
    metrics = outcome.metrics.as_dict()
    assert metrics["tool_count"] == 3
    assert metrics["files_changed"] == 1
    assert metrics["turns"] == 3
    assert metrics["response_length"] == len("Let me look.All done.")
    assert metrics["input_tokens"] + metrics["cache_read_tokens"] > 0
    assert metrics["cost_usd"] > 0
    assert [r.tool for r in seen] == ["read_file", "edit_file", "submit_result"]
    assert all(r.success for r in seen)
    # The tool result went back, tied to its call.
    second = stub.bodies[1]
    result = last_user_blocks(second)[0]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == "toolu_read"
    assert "def greet" in result["content"]
    assert "is_error" not in result


def test_an_invalid_result_goes_back_as_an_error_then_a_valid_one_passes(
    stub, client, worktree
):
    stub.add(submit({"summary": "", "extra": 1}), submit(GOOD))

    outcome = run(client, worktree)

    assert outcome.ok
    rejected = last_user_blocks(stub.bodies[1])[0]
    assert rejected["is_error"] is True
    assert "'should_proceed' is a required property" in rejected["content"]
    assert "('extra' was unexpected)" in rejected["content"]
    assert "should be non-empty" in rejected["content"]
    assert [r.success for r in outcome.records] == [False, True]


def test_repeated_invalid_results_get_one_more_chance_then_escalate(
    stub, client, worktree
):
    stub.add(*[submit({"summary": 3}) for _ in range(6)])
    outcome = run(client, worktree, budget=Budget(max_invalid_submissions=3))
    assert outcome.kind == Kind.INVALID_RESULT
    assert len(stub.requests) == 6
    last_chance = last_user_blocks(stub.bodies[3])[-1]["text"]
    assert last_chance.startswith("3 invalid results submitted")
    assert "last chance" in last_chance
    assert "is not of type 'string'" in outcome.reason
    assert outcome.phase_result().outcome == "escalate"


def test_tool_failures_are_is_error_results(stub, client, worktree):
    stub.add(
        message(
            tool_use("read_file", {"path": "../../etc/passwd"}),
            tool_use("no_such_tool", {}),
        ),
        submit(GOOD),
    )
    outcome = run(client, worktree)
    assert outcome.ok
    results = last_user_blocks(stub.bodies[1])
    assert [r["is_error"] for r in results] == [True, True]
    assert "outside the worktree" in results[0]["content"]
    assert (
        "unknown tool 'no_such_tool'; the tools are: list_files"
        in (results[1]["content"])
    )
    assert "submit_result" in results[1]["content"]


def test_rate_limit_stops_the_run_with_wait_retry(stub, client, worktree):
    # Longer than a worker waits in place (model_retry_max_wait 30 s): the
    # run ends and the step is requeued after the server's delay.
    stub.add(message(tool_use("list_files", {})), error(429, retry_after=60))
    outcome = run(client, worktree)
    assert outcome.kind == Kind.ERROR
    assert outcome.error.action is Action.WAIT_RETRY
    assert outcome.error.retry_after == 60
    assert outcome.metrics.turns == 1  # what was spent before it stays counted
    result = outcome.phase_result()
    assert result.outcome == "error"
    assert result.error.retry_after == 60


def test_overload_and_auth_errors_keep_their_action(stub, client, worktree):
    no_retries = Budget(model_retries=0)  # in-place retries: test_runtime_retries
    stub.add(error(529))
    assert run(client, worktree, no_retries).error.action is Action.WAIT_RETRY
    stub.add(error(401))
    assert run(client, worktree).error.action is Action.ROTATE_TOKEN


def test_refusal_stops_for_manual_review(stub, client, worktree):
    stub.add(
        message(
            "I can't help with that.",
            stop_reason="refusal",
            stop_details={"type": "refusal", "category": "cyber"},
        )
    )
    outcome = run(client, worktree)
    assert outcome.kind == Kind.REFUSAL
    assert "cyber" in outcome.reason
    result = outcome.phase_result()
    assert result.outcome == "escalate"
    assert result.escalation_code == "manual_review"
    assert len(stub.requests) == 1


def test_max_tokens_continues_without_running_the_cut_off_call(stub, client, worktree):
    cut = tool_use("write_file", {"path": "half.py"})  # its content never came
    stub.add(message("Writing the file", cut, stop_reason="max_tokens"), submit(GOOD))

    outcome = run(client, worktree)

    assert outcome.ok
    assert not (worktree / "half.py").exists()
    second = stub.bodies[1]["messages"]
    assert [b["type"] for b in second[-2]["content"]] == ["text"]
    assert second[-1]["content"][0]["text"] == CONTINUE


def test_pause_turn_sends_the_turn_back(stub, client, worktree):
    stub.add(message("Working...", stop_reason="pause_turn"), submit(GOOD))
    outcome = run(client, worktree)
    assert outcome.ok
    assert stub.bodies[1]["messages"][-1]["role"] == "assistant"


def test_end_turn_without_a_result_is_nudged_then_given_a_last_chance(
    stub, client, worktree
):
    stub.add(*[message("I think I'm done.") for _ in range(4)])
    outcome = run(client, worktree)
    assert outcome.kind == Kind.NO_RESULT
    assert stub.bodies[1]["messages"][-1]["content"][0]["text"] == NUDGE
    assert "last chance" in stub.bodies[2]["messages"][-1]["content"][0]["text"]
    assert stub.bodies[3]["messages"][-1]["content"][0]["text"] == NUDGE
    assert len(stub.requests) == 4
    assert outcome.phase_result().outcome == "escalate"

    stub.add(message("Done."), submit(GOOD))
    assert run(client, worktree).ok


def test_context_window_exceeded_compacts_and_continues(stub, client, worktree):
    (worktree / "big.txt").write_text("line\n" * 2000)
    reads = [
        message(tool_use("read_file", {"path": "big.txt"}, id=f"toolu_{n}"))
        for n in range(4)
    ]
    stub.add(
        *reads,
        message("", stop_reason="model_context_window_exceeded"),
        submit(GOOD),
    )
    outcome = run(client, worktree)
    assert outcome.ok
    last = stub.bodies[-1]["messages"]
    stubs = [
        b
        for m in last
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result" and b["content"] == STUB
    ]
    assert stubs  # old outputs were replaced
    assert len(str(last)) < len(str(stub.bodies[-2]["messages"]))


def test_cost_cap_stops_the_loop(stub, client, worktree):
    expensive = {"input_tokens": 100_000, "output_tokens": 10_000}
    stub.add(
        message(tool_use("list_files", {}), usage=expensive),
        message(tool_use("list_files", {}), usage=expensive),
        submit(GOOD),
    )
    outcome = run(client, worktree, budget=Budget(max_cost_usd=Decimal("0.50")))

    assert outcome.kind == Kind.BUDGET_EXHAUSTED
    assert "cost budget exhausted" in outcome.reason
    assert outcome.metrics.cost_usd == Decimal("0.90")  # 2 x (0.30 + 0.15)
    assert len(stub.requests) == 2
    result = outcome.phase_result()
    assert result.outcome == "escalate"
    assert result.escalation_code == "manual_review"
    assert result.reason.startswith("cost budget exhausted")
    assert result.metrics["cost_usd"] == Decimal("0.90")


def test_turn_and_token_caps(stub, client, worktree):
    stub.add(*[message(tool_use("list_files", {})) for _ in range(3)])
    outcome = run(client, worktree, budget=Budget(max_turns=3))
    assert outcome.kind == Kind.BUDGET_EXHAUSTED
    assert "turn budget" in outcome.reason

    stub.add(message(tool_use("list_files", {}), usage={"input_tokens": 500}))
    outcome = run(client, worktree, budget=Budget(max_tokens=100))
    assert "token budget" in outcome.reason


def test_wall_clock_adds_a_wrap_up_then_stops(stub, client, worktree):
    now = [0.0]

    def clock():
        return now[0]

    def advance(reply):
        now[0] += 30
        return reply

    stub.add(*[message(tool_use("list_files", {})) for _ in range(5)])
    original = stub._next_reply
    stub._next_reply = lambda body: advance(original(body))

    outcome = run(client, worktree, budget=Budget(max_seconds=100), clock=clock)

    assert outcome.kind == Kind.BUDGET_EXHAUSTED
    assert "time budget" in outcome.reason
    texts = [
        [b.get("text") for b in body["messages"][-1]["content"]] for body in stub.bodies
    ]
    assert WRAP_UP not in texts[2]  # 60s of 100s
    assert WRAP_UP in texts[3]  # 90s: past 80%, added once
    assert sum(WRAP_UP in t for t in texts) == 1


def test_tool_output_is_capped(stub, client, worktree):
    (worktree / "huge.txt").write_text("y" * 50_000)
    stub.add(message(tool_use("read_file", {"path": "huge.txt"})), submit(GOOD))
    run(client, worktree, budget=Budget(tool_output_chars=1000))
    content = last_user_blocks(stub.bodies[1])[0]["content"]
    assert len(content) < 1300
    assert "characters cut here" in content


def test_cache_breakpoints_on_system_tools_and_the_conversation(stub, client, worktree):
    stub.add(
        message(tool_use("list_files", {})),
        message(tool_use("read_file", {"path": "README.md"})),
        submit(GOOD),
    )
    outcome = run(client, worktree)
    for body in stub.bodies:
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert all("cache_control" not in tool for tool in body["tools"][:-1])
        last = body["messages"][-1]["content"]
        assert last[-1]["cache_control"] == {"type": "ephemeral"}
        marks = sum(
            "cache_control" in block
            for m in body["messages"]
            if isinstance(m["content"], list)
            for block in m["content"]
        )
        assert marks <= 2  # with system and tools: at most the API's four
    # The breakpoints move every turn: the stored conversation is never marked.
    assert "cache_control" not in str(outcome.messages)


def test_a_long_session_resends_mostly_cached_tokens(stub, client, worktree):
    for n in range(30):
        (worktree / f"module_{n}.py").write_text(f"# module {n}\n" + "x = 1\n" * 600)
    stub.add(
        *[
            message(tool_use("read_file", {"path": f"module_{n}.py"}))
            for n in range(29)
        ],
        submit(GOOD),
    )
    outcome = run(client, worktree)
    assert outcome.ok
    assert outcome.metrics.turns == 30

    usages = stub.usages
    read = sum(u["cache_read_input_tokens"] for u in usages)
    written = sum(u["cache_creation_input_tokens"] for u in usages)
    plain = sum(u["input_tokens"] for u in usages)
    uncached_share = (plain + written) / (plain + written + read)
    print(f"uncached share of input tokens over 30 turns: {uncached_share:.1%}")
    assert all(u["cache_read_input_tokens"] > 0 for u in usages[1:])
    assert uncached_share < 0.15
    # The run's metrics are the stub's usage, summed.
    assert outcome.metrics.usage.cache_read_tokens == read


def test_validate_covers_the_roles_schema_subset():
    schema = {
        "type": "object",
        "required": ["n", "kind", "items"],
        "properties": {
            "n": {"type": "integer", "minimum": 1},
            "kind": {"enum": ["a", "b"]},
            "items": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            "maybe": {"type": ["string", "null"]},
        },
    }
    assert validate({"n": 2, "kind": "a", "items": ["x"], "maybe": None}, schema) == []
    errors = validate({"n": True, "kind": "c", "items": [1]}, schema)
    assert errors == [
        "$.items[0]: 1 is not of type 'string'",
        "$.kind: 'c' is not one of ['a', 'b']",
        "$.n: True is not of type 'integer'",
    ]
    assert validate([], schema) == ["$: [] is not of type 'object'"]
    assert validate({"n": float("nan"), "kind": "a", "items": ["x"]}, schema) == [
        "$: numbers must be finite (NaN and Infinity are refused)"
    ]


def test_submit_result_name_is_reserved(client, worktree):
    from agents.tools import Tool

    clash = Tool("submit_result", "", {"type": "object"}, lambda a: "")
    with pytest.raises(ValueError):
        run_agent(client, system="s", prompt="p", result_schema=SCHEMA, tools=[clash])


def test_validate_enforces_every_keyword_of_the_schema():
    """The whole of JSON Schema (the jsonschema library), not a subset: a
    pattern, a length cap or a count cap the roles declare is enforced."""
    schema = {
        "type": "object",
        "properties": {
            "labels": {
                "type": "array",
                "maxItems": 2,
                "items": {"type": "string", "pattern": "^[a-z]+$"},
            },
            "title": {"type": "string", "maxLength": 5},
        },
    }
    assert validate({"labels": ["ok"], "title": "short"}, schema) == []
    errors = validate({"labels": ["<b>bad</b>", "a", "b"], "title": "too long"}, schema)
    assert len(errors) == 3
    assert any("does not match" in error for error in errors)
    assert any("is too long" in error for error in errors)
