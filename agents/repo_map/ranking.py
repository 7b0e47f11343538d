"""Ranking the definitions of a repository and fitting them to a budget.

A definition ranks by the number of other files that refer to its name,
shared out among the files that define that name (a `run` defined in a hundred
files is worth little to each), a tenth of that for private names and ten
times for long compound ones (the weights of Aider's repository map). A file
in focus (the request names it, the branch changed it) counts FOCUS_WEIGHT
times, so what it uses comes first; the focus files' own definitions come
before everything. This is one step of the PageRank that Aider's repository
map runs, which costs one pass over the references instead of many: on a large
repository that is the difference between a fraction of a second and seconds.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain

from agents.repo_map.tags import DEPTH, KIND, LINE, NAME, PARENT, SIGNATURE, Definition

FOCUS_WEIGHT = 10
PRIVATE_WEIGHT = 0.1
SPECIFIC_WEIGHT = 10.0
# Candidates that do not fit in a row before the fitting stops looking.
MAX_MISSES = 200


def focused_files(paths: Sequence[str], focus: Iterable[str]) -> set[int]:
    """Indexes of `paths` that a focus entry names: the path itself, its
    trailing part ("sandbox.py", "agents/sandbox.py") or a folder above it."""
    wanted = {f.strip().strip("/").removeprefix("./") for f in focus}
    wanted.discard("")
    if not wanted:
        return set()
    found = set()
    for index, path in enumerate(paths):
        if path in wanted:
            found.add(index)
            continue
        parts = path.split("/")
        for cut in range(1, len(parts)):
            if "/".join(parts[cut:]) in wanted or "/".join(parts[:cut]) in wanted:
                found.add(index)
                break
    return found


def ranked(
    names: Sequence[list[str]],
    references: Sequence[list[str]],
    focused: set[int],
) -> Iterator[tuple[int, str]]:
    """(file index, name) of every definition, best first: those of the
    focus files, then the others by score, then the unreferenced ones."""
    # Counting runs in C (Counter over chained lists); a Python loop per name
    # would cost seconds on a large repository.
    definers = Counter(chain.from_iterable(names))
    referrers = Counter(chain.from_iterable(references))
    for index in focused:
        for _ in range(FOCUS_WEIGHT - 1):
            referrers.update(references[index])
    values = {
        name: count / definers[name] * _weight(name)
        for name, count in referrers.items()
        if name in definers
    }
    first = sorted(
        (-values.get(name, 0.0), index, name)
        for index in focused
        for name in names[index]
    )
    for _, index, name in first:
        yield index, name
    scored = [
        (-values[name], index, name)
        for index, defined in enumerate(names)
        if index not in focused
        for name in defined
        if name in values
    ]
    heapq.heapify(scored)
    while scored:
        _, index, name = heapq.heappop(scored)
        yield index, name
    for index, defined in enumerate(names):
        if index not in focused:
            for name in defined:
                if name not in values:
                    yield index, name


def _weight(name: str) -> float:
    """A private name counts less; a long compound one (`search_files`,
    `IdentifierFilter`) more, since a file naming it almost surely means that
    definition, where `get` or `filter` could mean any of a thousand."""
    if name[0] == "_":
        return PRIVATE_WEIGHT
    compound = "_" in name or not (name.islower() or name.isupper())
    return SPECIFIC_WEIGHT if compound and len(name) >= 8 else 1.0


def line(definition: Definition) -> str:
    indent = "  " * definition[DEPTH]
    return f"{definition[LINE]:>6} {indent}{definition[SIGNATURE]}"


def printable(path: str) -> str:
    """A path on one line, whatever characters it holds."""
    if path.isprintable():
        return path
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in path)


def fit(
    paths: Sequence[str],
    outline_of: Callable[[int], list[Definition]],
    order: Iterable[tuple[int, str]],
    budget_chars: int,
) -> str:
    """The map: file by file in the order their first definition came, each
    with its chosen definitions (and the classes holding them) in source
    order, as many as fit in `budget_chars`."""
    chosen: dict[int, set[int]] = {}
    used = misses = 0
    for index, name in order:
        outline = outline_of(index)
        shown = chosen.get(index, set())
        new: set[int] = set()
        for number, definition in enumerate(outline):
            if definition[NAME] != name or definition[KIND] == "impl":
                continue
            while number >= 0 and number not in shown and number not in new:
                new.add(number)
                number = outline[number][PARENT]
        if not new:
            continue
        cost = sum(len(line(outline[n])) + 1 for n in new)
        if index not in chosen:
            cost += len(printable(paths[index])) + 2
        if used + cost > budget_chars:
            misses += 1
            if misses > MAX_MISSES:
                break
            continue
        misses = 0
        used += cost
        chosen.setdefault(index, set()).update(new)
    lines = []
    for index, numbers in chosen.items():  # dicts keep the order of choice
        outline = outline_of(index)
        lines.append(printable(paths[index]) + ":")
        lines += [line(outline[n]) for n in sorted(numbers)]
    return "\n".join(lines) + "\n" if lines else ""
