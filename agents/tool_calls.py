"""The tool calls of one agent run: each tool_use block of a reply run (or
refused, with the reason the model reads), its tool_result block, and its
record; `submit_result`, the runtime's own tool, checked against the role's
schema and by the role before it is accepted."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agents.conversation import validate
from agents.prompts import untrusted
from agents.repeats import RepeatWatch
from agents.run_outcome import RunMetrics
from agents.tools import Tool, ToolOutcome, ToolRecord, cap_text

SUBMIT_RESULT = "submit_result"
INVALID_INPUT = (
    "Error: this call of {name} was not run: {problem}. Call it again with a "
    "valid JSON object as its input; put long file contents in smaller writes."
)


def submit_tool(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": SUBMIT_RESULT,
        "description": (
            "Submit the result of your work. Call it exactly once, when done, with "
            "an object matching this schema; an invalid object is returned to you "
            "with the errors."
        ),
        "input_schema": dict(schema),
    }


class ToolCalls:
    """The tools of one run and what their calls did: `records` (every
    call), `invalid` (rejected results so far), `repeats` (agents.repeats);
    each call counted in `metrics` and handed to `on_tool`."""

    def __init__(
        self,
        tools: Iterable[Tool],
        schema: Mapping[str, Any],
        *,
        metrics: RunMetrics,
        output_chars: int,
        on_tool: Callable[[ToolRecord], None] | None,
        review_submission: Callable[[dict[str, Any]], str] | None,
        repeats: RepeatWatch,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        if SUBMIT_RESULT in self.tools:
            raise ValueError(f"{SUBMIT_RESULT} is the runtime's own tool")
        self.definitions = [tool.definition() for tool in self.tools.values()]
        self.definitions.append(submit_tool(schema))
        self.schema = schema
        self.metrics = metrics
        self.output_chars = output_chars
        self.on_tool = on_tool
        self.review_submission = review_submission
        self.repeats = repeats
        self.records: list[ToolRecord] = []
        self.invalid = 0

    def call(
        self, block: Mapping[str, Any], invalid_input: str = ""
    ) -> tuple[dict[str, Any], Any]:
        """Run one tool_use block: its tool_result block, and the submitted
        result if this was a valid submit_result. `invalid_input`: why the
        block's input could not be read (then nothing runs)."""
        name, arguments = block.get("name", ""), block.get("input") or {}
        submitted = None
        if invalid_input:
            message = INVALID_INPUT.format(name=name or "?", problem=invalid_input)
            outcome = ToolOutcome(
                message, True, ToolRecord(name or "?", False, message)
            )
        elif name == SUBMIT_RESULT:
            errors = (
                validate(arguments, self.schema)
                if isinstance(arguments, dict)
                else ["$: expected object"]
            )
            if errors:
                self.invalid += 1
                message = "Result rejected:\n" + "\n".join(errors[:50])
                outcome = ToolOutcome(
                    message,
                    True,
                    ToolRecord(name, False, message, {"errors": errors[:50]}),
                )
            else:
                refused = (
                    self.review_submission(dict(arguments))
                    if self.review_submission is not None
                    else ""
                )
                if refused:
                    outcome = ToolOutcome(
                        f"Not accepted yet: {refused}",
                        True,
                        ToolRecord(name, False, refused),
                    )
                else:
                    submitted = dict(arguments)
                    outcome = ToolOutcome(
                        "Result accepted.", False, ToolRecord(name, True)
                    )
        elif name in self.tools:
            outcome = self.tools[name].call(arguments)
        else:
            known = ", ".join([*self.tools, SUBMIT_RESULT])
            message = f"unknown tool {name!r}; the tools are: {known}"
            outcome = ToolOutcome(
                f"Error: {message}", True, ToolRecord(name or "?", False, message)
            )
        self.metrics.tool_count += 1
        self.metrics.files_changed.update(outcome.record.files_changed)
        self.records.append(outcome.record)
        if self.on_tool is not None:
            self.on_tool(outcome.record)
        content = cap_text(outcome.content, self.output_chars)
        if outcome.record.files_changed:
            self.repeats.changed_files()
        elif name != SUBMIT_RESULT and not invalid_input:
            content += self.repeats.see(name, arguments, content)
        if name != SUBMIT_RESULT:
            # File contents, command output, answers: fenced, as the system
            # prompt says (agents.prompts).
            content = untrusted(f"{name} result", content, raw=True)
        result = {
            "type": "tool_result",
            "tool_use_id": block["id"],
            "content": content,
        }
        if outcome.is_error:
            result["is_error"] = True
        return result, submitted
