"""Comments, docstrings and strings in product code, and the repository's
Markdown (README.md, SECURITY.md, docs/), cite docs/, never what a reader of
the repository cannot open: a spec number or section, a tracker issue, the
design notes or "the brief". Strings count too: an error message or a help
text citing "spec 000 §1" sends an operator where they cannot follow.

The offenders already there are listed in tests/citations_allowed.txt (one
`path:text` per line, the text being the stripped source line, so the list
survives edits elsewhere in the file); a new one fails. docs/README.md maps each
cited spec section to the docs/ anchor that replaces it. Run this file as a
script to print today's offenders in the allow-list's format.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("codex", "agents", "integrations")
ALLOWED = Path(__file__).with_name("citations_allowed.txt")

OUTSIDE = re.compile(
    r"\bspecs?\s*0\d\d"  # spec 002, specs 001-004
    r"|§"  # a section sign: a spec's section
    r"|\bissues?\s*#?\d+"  # issue 8, issue #8
    r"|\bthe specs?\b"  # the spec's layout
    r"|design\.md|stack\.md|style\.md|\.\./shared"  # the notes beside the repository
    r"|\bthe brief\b",
    re.IGNORECASE,
)
# In a message or a help text "the spec" and "the brief" are Codex's own
# documents (a plan's spec.md, a triage's brief): only numbered citations and
# the notes beside the repository count there.
OUTSIDE_IN_STRINGS = re.compile(
    r"\bspecs?\s*0\d\d|§|\bissues?\s*#?\d+|design\.md|stack\.md|style\.md|\.\./shared",
    re.IGNORECASE,
)


def _comment_lines(source: str) -> set[int]:
    """Line numbers holding a comment."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {tok.start[0] for tok in tokens if tok.type == tokenize.COMMENT}


def _docstring_lines(source: str) -> set[int]:
    """Line numbers inside a docstring (or any bare string statement)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _string_lines(source: str) -> set[int]:
    """Line numbers inside a string literal: docstrings, messages, help texts
    (f-strings' literal parts included)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _markdown() -> list[Path]:
    """The repository's own Markdown: README.md, SECURITY.md, docs/."""
    return sorted(
        [*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), *ROOT.glob("tests/*.md")]
    )


def offenders() -> list[str]:
    """Every `path:text` of product code whose comment or string, or of the
    repository's Markdown, cites something outside the repository, in path
    order. Migrations are applied history and keep what they said."""
    found: list[str] = []
    for path in _markdown():
        relative = path.relative_to(ROOT).as_posix()
        for line in path.read_text(encoding="utf-8").splitlines():
            if OUTSIDE.search(line):
                found.append(f"{relative}:{line.strip()}")
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            source = path.read_text(encoding="utf-8")
            text_lines = source.splitlines()
            prose = _comment_lines(source) | _docstring_lines(source)
            strings = _string_lines(source) - prose
            relative = path.relative_to(ROOT).as_posix()
            for number in sorted(prose | strings):
                line = text_lines[number - 1]
                pattern = OUTSIDE if number in prose else OUTSIDE_IN_STRINGS
                if pattern.search(line):
                    found.append(f"{relative}:{line.strip()}")
    return found


def allowed() -> set[str]:
    """The allow-list: today's offenders, burnt down as comments cite docs/."""
    return {
        line
        for line in ALLOWED.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }


def test_it_finds_the_citations_it_looks_for():
    for line in (
        "# spec 002 §3.4: the lease",
        "# see issue 8",
        "# as DESIGN.md says",
        "# per the brief",
        "# Spec 001's response",
        "# the spec's layout",
        "# see ../shared/STACK.md",
    ):
        assert OUTSIDE.search(line), line
    for line in ("# docs/domain/tasks.md#leases", "# a specific issue", "# briefly"):
        assert not OUTSIDE.search(line), line
    for line in ('"a claim needs a session id (spec 000 §1)"', '"see issue 12"'):
        assert OUTSIDE_IN_STRINGS.search(line), line
    for line in ('"approve the spec, plan and tasks"', '"The brief is required."'):
        assert not OUTSIDE_IN_STRINGS.search(line), line


def test_it_cites_only_the_repository():
    found = offenders()
    stale = allowed() - set(found)
    assert not stale, "fixed: remove from citations_allowed.txt:\n" + "\n".join(
        sorted(stale)
    )
    new = [line for line in found if line not in allowed()]
    assert not new, (
        "comments and docstrings cite docs/<file>.md#<anchor>, never a spec, an "
        "issue number, DESIGN.md or the brief (docs/README.md maps spec sections "
        "to anchors):\n" + "\n".join(new)
    )


if __name__ == "__main__":
    sys.stdout.write("".join(f"{line}\n" for line in offenders()))
