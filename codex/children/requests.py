"""Child requests: what each child of a fan-out is asked to do, and the list
of children a request (an issue body, a task's description, an operator's
form) can carry (docs/children.md, "Listing children").

Children are listed only under a ``Children`` heading (any level; the
section ends at the next heading), so that a request which merely mentions
"C1: ..." somewhere is not fanned out by accident. A listed child is one line
``C<n>: <title>`` (a bullet or a task-list box in front is allowed), followed
by indented lines of description::

    ## Children
    - [ ] C1: Add mul(a, b)
      With its test.
    - [ ] C2: Add sub(a, b)

Pure functions: no database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codex.children.models.fan_out_queryset import MAX_CHILDREN

_CHILD_LINE = re.compile(
    r"^(?:[-*+]\s+(?:\[[ xX]\]\s+)?)?(C[0-9]{1,2})\s*[:.)\-–—]\s*(\S.*)$"
)
_CHILDREN_HEADING = re.compile(r"^#{1,6}\s+children\s*:?\s*#*\s*$", re.IGNORECASE)
_HEADING = re.compile(r"^#{1,6}\s")
TITLE_MAX_LENGTH = 200


class ChildListInvalid(ValueError):
    """A list of children that cannot be fanned out, with the reason."""


@dataclass(frozen=True)
class ChildRequest:
    """One child's share of the parent's request."""

    child_id: str
    title: str
    description: str = ""
    acceptance_criteria: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "child_id": self.child_id,
            "title": self.title,
            "description": self.description,
            "acceptance_criteria": self.acceptance_criteria,
        }


def parse_children_list(text: str) -> list[ChildRequest]:
    """The children `text` lists under its ``Children`` heading, in order;
    [] when it has no such section or the section lists none.

    Raises ChildListInvalid for more than MAX_CHILDREN children or a child id
    listed twice (docs/domain/fan-out.md#fan-out-limits).
    """
    if not isinstance(text, str):
        return []
    children: list[ChildRequest] = []
    current: dict[str, object] | None = None
    for raw in children_section(text):
        line = raw.strip()
        found = _CHILD_LINE.match(line)
        if found and not raw[:1].isspace():
            if current is not None:
                children.append(_child(current))
            current = {"id": found.group(1), "title": found.group(2), "body": []}
        elif current is not None and raw[:1].isspace() and line:
            current["body"].append(line)  # type: ignore[union-attr]
        elif current is not None and line:
            children.append(_child(current))
            current = None
    if current is not None:
        children.append(_child(current))
    ids = [child.child_id for child in children]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ChildListInvalid(f"child {', '.join(repeated)} is listed twice")
    if len(children) > MAX_CHILDREN:
        raise ChildListInvalid(
            f"{len(children)} children listed; a parent has at most {MAX_CHILDREN}"
        )
    return children


def children_section(text: str) -> list[str]:
    """The lines of the first ``Children`` section of `text` (between its
    heading and the next heading); [] without one."""
    lines = text.replace("\r\n", "\n").split("\n")
    start = next(
        (n for n, line in enumerate(lines) if _CHILDREN_HEADING.match(line.strip())),
        None,
    )
    if start is None:
        return []
    section: list[str] = []
    for line in lines[start + 1 :]:
        if _HEADING.match(line):
            break
        section.append(line)
    return section


def _child(found: dict[str, object]) -> ChildRequest:
    return ChildRequest(
        child_id=str(found["id"]),
        title=str(found["title"]).strip()[:TITLE_MAX_LENGTH],
        description="\n".join(found["body"]),  # type: ignore[arg-type]
    )


def from_split(split: list[dict[str, str]]) -> list[ChildRequest]:
    """The planner's split (title, description, acceptance_criteria each),
    numbered C1, C2, ... Raises ChildListInvalid outside 1..MAX_CHILDREN."""
    if not 1 <= len(split) <= MAX_CHILDREN:
        raise ChildListInvalid(
            f"a split has 1 to {MAX_CHILDREN} children, not {len(split)}"
        )
    return [
        ChildRequest(
            child_id=f"C{number}",
            title=str(item.get("title") or "").strip()[:TITLE_MAX_LENGTH]
            or f"Part {number}",
            description=str(item.get("description") or "").strip(),
            acceptance_criteria=str(item.get("acceptance_criteria") or "").strip(),
        )
        for number, item in enumerate(split, 1)
    ]
