"""Syntax checks of the files an agent writes, with tree-sitter grammars.

`language_for(path)` names the grammar of a file by its extension and
`parser_for(language)` gives a parser for it: the building blocks for any
tool that parses the repository's code. `check(path, source)` lists the parse
errors of a file (line, column and the offending line), so an edit that breaks
a file says so at once instead of when QA runs the tests.

tree-sitter's Python grammar does not model indentation errors, so for Python
the interpreter's own parser adds those (only IndentationError: a newer
syntax the worker's Python does not know must not be reported as an error).
"""

from __future__ import annotations

import ast
import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

import tree_sitter

__all__ = ["LANGUAGES", "SyntaxProblem", "check", "language_for", "parser_for"]

# Extension → grammar. TypeScript's JSX dialect is a grammar of its own.
LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
}

# At most this many problems are reported: the first ones are what to fix.
MAX_PROBLEMS = 5
# The offending line is shown up to this many characters.
MAX_SHOWN_CHARS = 200


@dataclass(frozen=True)
class SyntaxProblem:
    """One parse error: where (1-based line and column) and the line itself."""

    line: int
    column: int
    message: str
    text: str

    def describe(self) -> str:
        return (
            f"line {self.line}, column {self.column}: {self.message}\n    {self.text}"
        )


def language_for(path: str | PurePath) -> str | None:
    """The grammar's name for a file (by extension), None when none is known."""
    return LANGUAGES.get(PurePath(path).suffix.lower())


def _grammars() -> dict[str, Callable[[], object]]:
    # Imported here: each grammar package loads a compiled library.
    import tree_sitter_go
    import tree_sitter_javascript
    import tree_sitter_python
    import tree_sitter_rust
    import tree_sitter_typescript

    return {
        "python": tree_sitter_python.language,
        "javascript": tree_sitter_javascript.language,
        "typescript": tree_sitter_typescript.language_typescript,
        "tsx": tree_sitter_typescript.language_tsx,
        "go": tree_sitter_go.language,
        "rust": tree_sitter_rust.language,
    }


@functools.cache
def _language(name: str) -> tree_sitter.Language:
    grammar = _grammars().get(name)
    if grammar is None:
        raise KeyError(f"no grammar for {name!r}")
    return tree_sitter.Language(grammar())


def parser_for(language: str) -> tree_sitter.Parser:
    """A new parser of `language` (a name of LANGUAGES' values). Parsers are
    not shared: one is not safe to use from two threads at once."""
    return tree_sitter.Parser(_language(language))


def check(path: str | PurePath, source: bytes) -> list[SyntaxProblem] | None:
    """The parse errors of `source` as the file `path`; None when its language
    has no grammar here (no check was made), [] when it parses."""
    language = language_for(path)
    if language is None:
        return None
    tree = parser_for(language).parse(source)
    lines = source.splitlines()
    problems: list[SyntaxProblem] = []
    if tree.root_node.has_error:
        _collect(tree.root_node, lines, problems)
    if language == "python" and len(problems) < MAX_PROBLEMS:
        indentation = _python_indentation(source, lines)
        if indentation and all(p.line != indentation.line for p in problems):
            problems.append(indentation)
            problems.sort(key=lambda p: (p.line, p.column))
    return problems[:MAX_PROBLEMS]


def _collect(
    node: tree_sitter.Node, lines: list[bytes], problems: list[SyntaxProblem]
) -> None:
    """The ERROR and MISSING nodes under `node`, in source order; an ERROR's
    children are not searched (it is one problem)."""
    if len(problems) >= MAX_PROBLEMS:
        return
    if node.is_missing:
        problems.append(_problem(node, lines, f"missing {node.type!r}"))
        return
    if node.is_error:
        problems.append(_problem(node, lines, "syntax error"))
        return
    for child in node.children:
        if child.has_error or child.is_missing:
            _collect(child, lines, problems)


def _problem(node: tree_sitter.Node, lines: list[bytes], message: str) -> SyntaxProblem:
    row, column = node.start_point
    return SyntaxProblem(row + 1, column + 1, message, _line(lines, row + 1))


def _line(lines: list[bytes], number: int) -> str:
    if not 1 <= number <= len(lines):
        return ""
    text = lines[number - 1].decode("utf-8", errors="replace").rstrip()
    if len(text) > MAX_SHOWN_CHARS:
        text = text[:MAX_SHOWN_CHARS] + "..."
    return text


def _python_indentation(source: bytes, lines: list[bytes]) -> SyntaxProblem | None:
    """Python's own verdict on the indentation (parsed, never run)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like
            ast.parse(source)
    except IndentationError as exc:  # TabError is one too
        line = exc.lineno or 1
        return SyntaxProblem(
            line, exc.offset or 1, exc.msg or "bad indentation", _line(lines, line)
        )
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # Other syntax errors are tree-sitter's to report (the worker's
        # Python may be older than the repository's).
        return None
    return None
