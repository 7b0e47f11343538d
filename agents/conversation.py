"""What the loop does to the conversation besides sending it: checking a
submitted result against the role's schema (`validate`), marking each
request's cache breakpoints and compacting the history.

Prompt caching: the tools and the system prompt are the stable prefix and
carry a cache breakpoint; the conversation carries one on its last message
(and one on the previous request's last message, so the cache lookup always
finds what the previous turn wrote), so each turn re-sends the history as
cache reads and pays full price only for the new tail. Tool outputs are capped
and, when the history grows past a limit, old tool results are replaced by
short stubs, and what those turns did (the calls, the first line of each
answer, the agent's own words) is kept as notes in the first message, so the
agent does not forget what it learnt; compaction changes the prefix, so it
cuts well below the limit to happen rarely.

These are functions of the messages alone, kept out of the loop
(agents.runtime) so that it reads as the loop.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agents.prompts import untrusted
from agents.tools import finite, schema_validator

CACHE = {"type": "ephemeral"}
# Block types that may carry cache_control (thinking blocks may not).
_CACHEABLE = frozenset(
    {"text", "tool_use", "tool_result", "image", "document", "server_tool_use"}
)


# -- result validation ------------------------------------------------------


def validate(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Errors of `value` against JSON Schema `schema`, checked by the
    jsonschema library, each as "<path>: <message>" in document order (every
    error, so the model can fix them all at once); numbers must be finite."""
    if not finite(value):
        return [f"{path}: numbers must be finite (NaN and Infinity are refused)"]
    errors = sorted(
        schema_validator(schema).iter_errors(value),
        key=lambda error: [str(part) for part in error.absolute_path],
    )
    return [f"{_where(path, error.absolute_path)}: {error.message}" for error in errors]


def _where(root: str, parts: Iterable[Any]) -> str:
    text = root
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


# -- messages, caching and compaction --------------------------------------


def with_cache_breakpoints(
    system: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    messages: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Copies of system, tools and messages with cache_control on the last
    system block, the last tool, the last message and the message the previous
    request ended with (at most four breakpoints, the API's limit). The
    stored conversation is never marked: the breakpoints move every turn."""
    system_out = [dict(block) for block in system]
    if system_out:
        system_out[-1]["cache_control"] = CACHE
    tools_out = [dict(tool) for tool in tools]
    if tools_out:
        tools_out[-1]["cache_control"] = CACHE
    messages_out = list(messages)
    marks = [len(messages_out) - 1]
    # The previous request ended with the user message two turns back (user,
    # assistant, user); marking it too makes its cache entry a sure hit.
    if len(messages_out) >= 3 and messages_out[-1]["role"] == "user":
        marks.append(len(messages_out) - 3)
    for index in marks:
        if index >= 0:
            messages_out[index] = _mark_last_block(messages_out[index])
    return system_out, tools_out, messages_out


def _mark_last_block(message: Mapping[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        blocks: list[dict[str, Any]] = [{"type": "text", "text": content}]
    else:
        blocks = [dict(block) for block in content]
    for block in reversed(blocks):
        if block.get("type") in _CACHEABLE and block.get("text", "x") != "":
            block["cache_control"] = CACHE
            break
    return {**message, "content": blocks}


def history_chars(messages: Sequence[Mapping[str, Any]]) -> int:
    return len(json.dumps(messages, default=str))


THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
STUB = (
    "[earlier output removed to keep the context small; run the tool again if needed]"
)
INPUT_STUB_CHARS = 500


NOTES_HEADER = (
    "Notes on earlier turns of this run, kept when their tool outputs were "
    "removed to save context: your calls with the first line of each answer, "
    "and what you wrote. Run a tool again for the details."
)
NOTES_MAX_CHARS = 6_000
NOTE_TEXT_CHARS = 400
NOTE_LINE_CHARS = 160
# The arguments that say what a call was about, shown in the notes.
_TELLING_ARGUMENTS = ("path", "pattern", "command", "query", "source", "destination")


def compact(
    messages: list[dict[str, Any]], *, target_chars: int, keep_recent: int
) -> bool:
    """Shrink the history in place, oldest first, until it is under
    `target_chars`: old tool results become a stub, long inputs of old tool
    calls are shortened, and notes of what those turns did join the first
    message. The first message (the task) and the last `keep_recent`
    exchanges stay whole. True if anything changed.

    Thinking blocks before the point where the history changed are dropped:
    a thinking block belongs to the exact conversation that produced it, and
    the API accepts earlier turns without theirs (the recent turns, where the
    current tool use continues, keep them)."""
    changed = False
    notes: list[str] = []
    calls: dict[str, str] = {}
    protected = max(1, len(messages) - 2 * keep_recent)
    for message in messages[1:protected]:
        if history_chars(messages) <= target_chars:
            break
        content = message.get("content")
        if not isinstance(content, list):
            continue
        if message.get("role") == "assistant":
            kept = [b for b in content if b.get("type") not in THINKING_BLOCKS]
            if kept and len(kept) < len(content):
                message["content"] = content = kept
                changed = True
        for block in content:
            kind = block.get("type")
            if kind == "text" and message.get("role") == "assistant":
                said = " ".join(str(block.get("text", "")).split())
                if said and not said.startswith("[notes kept]"):
                    notes.append(f"you wrote: {_cut(said, NOTE_TEXT_CHARS)}")
                    block["text"] = f"[notes kept] {_cut(said, NOTE_LINE_CHARS)}"
            elif kind == "tool_use":
                calls[block.get("id", "")] = _call_line(block)
                for key, value in list(block.get("input", {}).items()):
                    if isinstance(value, str) and len(value) > INPUT_STUB_CHARS:
                        block["input"][key] = (
                            f"{value[:200]}... [{len(value)} characters, shortened]"
                        )
                        changed = True
            elif kind == "tool_result" and block.get("content") != STUB:
                call = calls.get(block.get("tool_use_id", ""), "a tool call")
                notes.append(f"{call} -> {_answer_line(block)}")
                block["content"] = STUB
                changed = True
    if notes:
        _add_notes(messages[0], notes)
    return changed


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _call_line(block: Mapping[str, Any]) -> str:
    arguments = block.get("input") or {}
    shown = {k: arguments[k] for k in _TELLING_ARGUMENTS if k in arguments}
    text = json.dumps(shown or arguments, default=str, ensure_ascii=False)
    return f"{block.get('name', '?')} {_cut(text, NOTE_LINE_CHARS)}"


def _answer_line(block: Mapping[str, Any]) -> str:
    """The first line of a tool result worth reading (inside its fence)."""
    content = block.get("content")
    if isinstance(content, list):
        content = " ".join(str(b.get("text", "")) for b in content)
    lines = [
        line.strip()
        for line in str(content or "").splitlines()
        if line.strip() and not line.strip().startswith(("<untrusted-", "</untrusted-"))
    ]
    first = _cut(lines[0], NOTE_LINE_CHARS) if lines else "(empty)"
    return f"error: {first}" if block.get("is_error") else first


def _add_notes(first: dict[str, Any], notes: list[str]) -> None:
    """Join the notes to the first message, fenced: tool output and the
    model's own words may carry text an attacker wrote."""
    body = "\n".join(f"- {note}" for note in notes)
    if len(body) > NOTES_MAX_CHARS:
        body = "- ...\n" + body[-NOTES_MAX_CHARS:].split("\n", 1)[-1]
    content = first.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    first["content"] = [
        *content,
        {
            "type": "text",
            "text": f"{NOTES_HEADER}\n"
            + untrusted("earlier turns of this run", body, raw=True),
        },
    ]
