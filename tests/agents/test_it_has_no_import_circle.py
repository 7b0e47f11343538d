"""No two modules of agents/ import each other, however indirectly, counting
imports inside functions and for type hints (docs/architecture.md#agents):
a reader can follow a step from the runner down without walking in circles."""

from __future__ import annotations

import grimp


def _circles(graph: grimp.ImportGraph) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph.find_modules_directly_imported_by(module):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = set()
            while True:
                other = stack.pop()
                on_stack.discard(other)
                group.add(other)
                if other == module:
                    break
            if len(group) > 1:
                found.append(group)

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_agents_has_no_import_circle():
    graph = grimp.build_graph("agents", include_external_packages=False)
    assert _circles(graph) == []


def test_the_check_finds_a_circle(tmp_path, monkeypatch):
    package = tmp_path / "circular"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from circular import b\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from circular import a\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("circular", include_external_packages=False)
    assert _circles(graph) == [{"circular.a", "circular.b"}]
