"""The SpecKit documents of a task, in the sections the storage layout's
readers expect (docs/domain/tasks.md#artifacts):

- spec.md: "# Feature: <title>", "## User Stories", "## Functional
  Requirements" (FR1, FR2, ...), "## Success Criteria" ("- [ ] SC1: ..."),
  "## Edge Cases" (EC1, ...);
- plan.md: "# Implementation Plan: <title>", "## Technical Context",
  "## Implementation Approach", "## Component Design";
- tasks.md: "# Tasks: <title>", "## Task List", then per task "### Task <n>:
  <title>" with its Files, Tests, Dependencies and Acceptance, and the
  `- [ ] T001: <title>` line the developer commits against.

The agents are asked for these sections; what they write is kept, and a
section they left out is added: filled from the request where the request says
it (the success criteria from its acceptance criteria), else marked as not
stated, so a reader always finds every section and sees what is missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

SPEC_SECTIONS = (
    "User Stories",
    "Functional Requirements",
    "Success Criteria",
    "Edge Cases",
)
PLAN_SECTIONS = ("Technical Context", "Implementation Approach", "Component Design")
# Headings agents commonly write for a section, read as that section.
PLAN_ALIASES = {
    "approach": "Implementation Approach",
    "implementation": "Implementation Approach",
    "design": "Component Design",
    "components": "Component Design",
    "architecture": "Component Design",
    "context": "Technical Context",
    "technical context": "Technical Context",
}
SPEC_ALIASES = {
    "acceptance criteria": "Success Criteria",
    "requirements": "Functional Requirements",
    "stories": "User Stories",
}
NOT_STATED = "_Not stated._"

_H1 = re.compile(r"^#(?!#)\s*(.*)$")
_H2 = re.compile(r"^##(?!#)\s*(.+?)\s*#*\s*$")


def _split(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(text before the first "## " heading without its "# " title, and the
    (heading, body) pairs in order)."""
    head: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line in text.strip().splitlines():
        match = _H2.match(line)
        if match:
            sections.append((match[1], []))
        elif sections:
            sections[-1][1].append(line)
        elif not _H1.match(line):
            head.append(line)
    return "\n".join(head).strip(), [
        (name, "\n".join(body).strip()) for name, body in sections
    ]


def _canonical(name: str, wanted: Iterable[str], aliases: Mapping[str, str]) -> str:
    lowered = name.strip().lower()
    for section in wanted:
        if lowered == section.lower():
            return section
    return aliases.get(lowered, name.strip())


def _assemble(
    title: str,
    text: str,
    wanted: tuple[str, ...],
    aliases: Mapping[str, str],
    fill: Mapping[str, str],
) -> str:
    head, found = _split(text)
    bodies: dict[str, list[str]] = {}
    extra: list[tuple[str, str]] = []
    for name, body in found:
        canonical = _canonical(name, wanted, aliases)
        if canonical in wanted:
            bodies.setdefault(canonical, []).append(body)
        else:
            extra.append((name, body))
    parts = [f"# {title}"]
    if head:
        parts.append(head)
    for section in wanted:
        body = "\n\n".join(b for b in bodies.get(section, []) if b)
        parts.append(f"## {section}\n\n{body or fill.get(section) or NOT_STATED}")
    parts.extend(f"## {name}\n\n{body}".rstrip() for name, body in extra)
    return "\n\n".join(parts).strip() + "\n"


def _numbered(lines: Iterable[str], prefix: str, *, checkbox: bool = False) -> str:
    items = [line.strip().lstrip("-*").strip() for line in lines]
    box = "[ ] " if checkbox else ""
    return "\n".join(
        f"- {box}{prefix}{n}: {item}" for n, item in enumerate(filter(None, items), 1)
    )


def complete_spec(text: str, *, title: str, acceptance_criteria: str = "") -> str:
    """spec.md with its title and every section (see the module docstring)."""
    fill = {}
    if acceptance_criteria.strip():
        fill["Success Criteria"] = _numbered(
            acceptance_criteria.splitlines(), "SC", checkbox=True
        )
    return _assemble(f"Feature: {title}", text, SPEC_SECTIONS, SPEC_ALIASES, fill)


def complete_plan(text: str, *, title: str) -> str:
    """plan.md with its title and every section (see the module docstring)."""
    return _assemble(
        f"Implementation Plan: {title}", text, PLAN_SECTIONS, PLAN_ALIASES, {}
    )


def _field(value: Any) -> str:
    if isinstance(value, list | tuple):
        value = ", ".join(str(item).strip() for item in value if str(item).strip())
    return str(value or "").strip()


def tasks_md(title: str, tasks: list[Mapping[str, Any]]) -> str:
    """tasks.md in the SpecKit form; each task depends on the one before it
    unless it names its own dependencies (the developer commits them in
    order)."""
    lines = [f"# Tasks: {title}" if title else "# Tasks", "", "## Task List"]
    for number, item in enumerate(tasks, 1):
        name = str(item["title"]).strip()
        dependencies = _field(item.get("dependencies")) or (
            "none" if number == 1 else f"Task {number - 1}"
        )
        lines += [
            "",
            f"### Task {number}: {name}",
            f"- [ ] T{number:03}: {name}",
            f"- **Files**: {_field(item.get('files')) or 'to be found'}",
            f"- **Tests**: {_field(item.get('tests')) or 'as the plan requires'}",
            f"- **Dependencies**: {dependencies}",
            f"- **Acceptance**: {_field(item.get('acceptance')) or 'its tests pass'}",
        ]
        description = str(item.get("description") or "").strip()
        if description:
            lines += ["", *description.splitlines()]
    return "\n".join(lines) + "\n"
