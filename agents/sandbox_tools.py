"""The sandbox's tools as the model sees them: names, descriptions (the text
the model reads to choose and call a tool) and input schemas.

Every file tool gets the sandbox's wall-time limit (`Tool.timeout`); the
command tool is bounded by the jail's own (agents.shell).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from agents.edits import MAX_SNIPPET_LINES
from agents.files import SKIPPED_NAMES
from agents.reading import (
    LIST_PAGE_SIZE,
    MAX_LIST_PAGE_SIZE,
    MAX_READ_BYTES,
    MAX_READ_LINE_BYTES,
)
from agents.search import MAX_PAGE_SIZE, PAGE_SIZE, REGEX_DIALECT
from agents.tools import Tool, _schema


class Toolbox(Protocol):
    """What the tools call: a sandbox's methods (agents.sandbox.Sandbox)."""

    tool_timeout: float | None
    list_files: Callable[..., Any]
    read_file: Callable[..., Any]
    search: Callable[..., Any]
    write_file: Callable[..., Any]
    edit_file: Callable[..., Any]
    multi_edit: Callable[..., Any]
    delete_file: Callable[..., Any]
    move_file: Callable[..., Any]
    _command_tool: Callable[..., Any]


REGULAR_ONLY = "Named pipes, sockets and devices are refused."
SKIPPED = ", ".join(sorted(SKIPPED_NAMES))
CHECKED = "Python, JavaScript, TypeScript, Go and Rust"
ANSWERED_LIKE_A_WRITE = (
    f"Answers a numbered snippet of the file around the change (at most "
    f"{MAX_SNIPPET_LINES} lines) and, for {CHECKED} files, a syntax check of "
    "the new file: its errors with line, column and the line, the file kept as "
    "written."
)


def _page(default: int, most: int) -> dict[str, dict[str, object]]:
    return {
        "offset": {"type": "integer", "minimum": 0, "default": 0},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": most,
            "default": default,
        },
    }


def sandbox_tools(sandbox: Toolbox) -> list[Tool]:
    """The tools of `sandbox`, bound to it."""
    limit = sandbox.tool_timeout
    timed = f"A call stops after {limit:g}s."
    return [
        Tool(
            "list_files",
            "List the regular files under a folder of the worktree (relative "
            f"path), sorted, {LIST_PAGE_SIZE} a page (limit, at most "
            f"{MAX_LIST_PAGE_SIZE}); a cut listing says how many files there "
            f"are and the offset of the next page. Skips {SKIPPED}. {timed}",
            _schema(
                {
                    "path": {"type": "string", "default": "."},
                    **_page(LIST_PAGE_SIZE, MAX_LIST_PAGE_SIZE),
                }
            ),
            lambda a: sandbox.list_files(
                a.get("path") or ".",
                a.get("offset", 0),
                a.get("limit", LIST_PAGE_SIZE),
            ),
            timeout=limit,
        ),
        Tool(
            "read_file",
            "Read a text file of the worktree, optionally lines start_line to "
            "end_line (1-based, inclusive). Lines are numbered; only the lines "
            f"asked for are read. One answer holds at most {MAX_READ_BYTES} "
            "bytes (it says which start_line to continue from) and a line is "
            f"cut at {MAX_READ_LINE_BYTES} bytes. Binary files are refused. "
            f"{REGULAR_ONLY} {timed}",
            _schema(
                {
                    "path": {"type": "string"},
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1},
                },
                ["path"],
            ),
            lambda a: sandbox.read_file(
                a["path"], a.get("start_line"), a.get("end_line")
            ),
            timeout=limit,
        ),
        Tool(
            "search",
            "Search the worktree's text files with git grep (tracked files and "
            "untracked ones .gitignore does not exclude; binary files skipped) "
            "for a plain string, or with regex=true a regular expression in "
            f"{REGEX_DIALECT}, matched line by line. Answers path:line:text, "
            f"{PAGE_SIZE} matches a page (limit, at most {MAX_PAGE_SIZE}); a cut "
            "answer says how many more there are and the offset of the next "
            f"page. {timed}",
            _schema(
                {
                    "pattern": {"type": "string", "minLength": 1},
                    "path": {"type": "string", "default": "."},
                    "regex": {"type": "boolean", "default": False},
                    "ignore_case": {"type": "boolean", "default": False},
                    **_page(PAGE_SIZE, MAX_PAGE_SIZE),
                },
                ["pattern"],
            ),
            lambda a: sandbox.search(
                a["pattern"],
                a.get("path") or ".",
                bool(a.get("regex")),
                bool(a.get("ignore_case")),
                a.get("offset", 0),
                a.get("limit", PAGE_SIZE),
            ),
            timeout=limit,
        ),
        Tool(
            "write_file",
            "Create or overwrite a file of the worktree with the given content "
            f"(its folders are created). {ANSWERED_LIKE_A_WRITE} {REGULAR_ONLY}",
            _schema(
                {"path": {"type": "string"}, "content": {"type": "string"}},
                ["path", "content"],
            ),
            lambda a: sandbox.write_file(a["path"], a["content"]),
            timeout=limit,
        ),
        Tool(
            "edit_file",
            "Replace exactly one occurrence of `old` with `new` in a file "
            "(`old` must be unique in the file), or every occurrence with "
            "replace_all. The file keeps its line endings. "
            f"{ANSWERED_LIKE_A_WRITE}",
            _schema(
                {
                    "path": {"type": "string"},
                    "old": {"type": "string", "minLength": 1},
                    "new": {"type": "string"},
                    "replace_all": {"type": "boolean", "default": False},
                },
                ["path", "old", "new"],
            ),
            lambda a: sandbox.edit_file(
                a["path"], a["old"], a["new"], bool(a.get("replace_all"))
            ),
            timeout=limit,
        ),
        Tool(
            "multi_edit",
            "Make several edits to one file in one call: each {old, new, "
            "replace_all} as in edit_file, applied in order, each to the result "
            "of the ones before. All apply or none does: the answer names the "
            f"first that failed and why. {ANSWERED_LIKE_A_WRITE}",
            _schema(
                {
                    "path": {"type": "string"},
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 100,
                        "items": _schema(
                            {
                                "old": {"type": "string", "minLength": 1},
                                "new": {"type": "string"},
                                "replace_all": {"type": "boolean", "default": False},
                            },
                            ["old", "new"],
                        ),
                    },
                },
                ["path", "edits"],
            ),
            lambda a: sandbox.multi_edit(a["path"], a["edits"]),
            timeout=limit,
        ),
        Tool(
            "delete_file",
            "Delete a file of the worktree (a file, not a folder).",
            _schema({"path": {"type": "string"}}, ["path"]),
            lambda a: sandbox.delete_file(a["path"]),
            timeout=limit,
        ),
        Tool(
            "move_file",
            "Move or rename a file of the worktree; the destination must "
            "not exist (its folders are created).",
            _schema(
                {"source": {"type": "string"}, "destination": {"type": "string"}},
                ["source", "destination"],
            ),
            lambda a: sandbox.move_file(a["source"], a["destination"]),
            timeout=limit,
        ),
        sandbox._command_tool(),
    ]
