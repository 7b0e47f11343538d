"""agents.syntax: the grammar of a file by its name, a parser for it (for
any tool that parses the repository's code) and the parse errors of a file."""

from __future__ import annotations

import pytest

from agents.syntax import check, language_for, parser_for


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"),
        ("stubs.pyi", "python"),
        ("web/app.JS", "javascript"),
        ("x.jsx", "javascript"),
        ("x.ts", "typescript"),
        ("x.tsx", "tsx"),
        ("main.go", "go"),
        ("lib.rs", "rust"),
        ("README.md", None),
        ("Makefile", None),
        ("py", None),
    ],
)
def test_language_for_a_path(path, language):
    assert language_for(path) == language


def test_a_parser_for_each_language_parses_its_code():
    sources = {
        "python": b"def f(x):\n    return x\n",
        "javascript": b"const f = (x) => <b>{x}</b>;\n",
        "typescript": b"function f(x: number): number { return x; }\n",
        "tsx": b"const A = (p: {n: number}) => <div>{p.n}</div>;\n",
        "go": b"package main\n\nfunc main() {}\n",
        "rust": b"fn main() { let x: u8 = 1; }\n",
    }
    for language, source in sources.items():
        tree = parser_for(language).parse(source)
        assert not tree.root_node.has_error, language
    assert parser_for("python") is not parser_for("python")
    with pytest.raises(KeyError):
        parser_for("cobol")


def test_check_lists_problems_with_line_column_and_text():
    problems = check("m.py", b"x = 1\ny = (2,\nz = 3\n")
    assert problems
    assert problems[0].line == 2
    assert problems[0].text == "y = (2,"
    assert check("m.py", b"x = 1\n") == []
    assert check("notes.txt", b"(((") is None


def test_python_indentation_errors_tree_sitter_misses_are_found():
    problems = check("m.py", b"def f():\nreturn 1\n")
    assert [(p.line, p.message) for p in problems] == [
        (2, "expected an indented block after function definition on line 1")
    ]
    mixed = check("m.py", b"if x:\n\tpass\n        pass\n")
    assert mixed and mixed[0].line == 3


def test_newer_python_syntax_is_not_an_error():
    # `type` statements parse in tree-sitter even where the worker's Python
    # is older: only indentation is Python's own verdict.
    assert check("m.py", b"type Pair = tuple[int, int]\n") == []
