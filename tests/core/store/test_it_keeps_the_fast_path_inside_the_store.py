"""The apps, the agents and the integrations speak plain Django: no file
outside codex/core names the fast path's machinery (they declare hot lookups
with `hot_row` and write around a version only with `write_unversioned`,
docs/architecture.md#fast-path)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
NAMES = re.compile(
    r"\b(first_row|all_rows|value_rows|aggregate_row|update_row|_base_manager"
    r"|CompiledQuery|compiled_query|plain_updates)\b"
)


def test_no_file_outside_the_core_names_the_fast_path():
    found = []
    for folder in ("codex", "agents", "integrations"):
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT)
            if relative.parts[:2] == ("codex", "core") or "migrations" in path.parts:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if NAMES.search(line):
                    found.append(f"{relative}:{number}: {line.strip()}")
    assert found == []
