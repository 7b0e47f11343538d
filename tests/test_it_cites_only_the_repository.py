"""Comments and docstrings in product code cite docs/, never what a reader of
the repository cannot open: a spec number or section, a tracker issue, the
design notes or "the brief".

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


def offenders() -> list[str]:
    """Every `path:text` of product code whose comment or docstring cites
    something outside the repository, in path order."""
    found: list[str] = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            text_lines = source.splitlines()
            prose = _comment_lines(source) | _docstring_lines(source)
            relative = path.relative_to(ROOT).as_posix()
            for number in sorted(prose):
                line = text_lines[number - 1]
                if OUTSIDE.search(line):
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
