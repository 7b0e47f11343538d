"""What the map keeps of one file: its outline (classes, functions and methods
with their signatures, one line each) and the names it refers to.

Only the outline a reader skims is kept: top-level definitions and the members
of classes (impl blocks, interfaces), not the helpers defined inside a
function. A tree-sitter parse never fails: a file with syntax errors gives what
could be read of it.
"""

from __future__ import annotations

import marshal
import re
from typing import NamedTuple

import tree_sitter

from agents.repo_map.languages import LANGUAGES, parser_and_query

# Bump when what is extracted changes: older cached tags are not read.
VERSION = 1
MAX_SIGNATURE_CHARS = 160
MAX_DEPTH = 2  # a method of a class nested in a class, at most
# Syntax nodes above a definition that are looked at: real code keeps its
# outline within a few dozen, and a file nesting thousands of classes would
# otherwise cost a walk up all of them for each.
MAX_ANCESTORS = 64
# A match limit keeps one pathological file from taking the query's time.
QUERY_MATCH_LIMIT = 20_000
CONTAINERS = frozenset({"class", "impl"})
_OPENING = re.compile(r"([(\[<]) ")
_CLOSING = re.compile(r",? ([)\]>])")

# One line of an outline, a plain tuple (there are hundreds of thousands in a
# large repository): (line, depth, parent, kind, name, signature). `parent` is
# the index of the class (impl block, interface) it belongs to in the file's
# outline, or -1; `kind` is "class", "function" or "impl" (an impl block has
# no name of its own to rank; it is shown with its methods).
LINE, DEPTH, PARENT, KIND, NAME, SIGNATURE = range(6)
Definition = tuple[int, int, int, str, str, str]


class Tags(NamedTuple):
    """A file's outline, the names it defines and the other names it refers
    to (each once: ranking counts the files that refer to a name, not how
    often one file does)."""

    outline: list[Definition]
    names: list[str]
    references: list[str]


EMPTY = Tags([], [], [])


def extract(language: str, source: bytes) -> Tags:
    """The tags of `source`, a file in `language` (a key of LANGUAGES)."""
    parser, query = parser_and_query(language)
    tree = parser.parse(source)
    cursor = tree_sitter.QueryCursor(query)
    cursor.match_limit = QUERY_MATCH_LIMIT
    captures = cursor.captures(tree.root_node)
    referred = {node.text for node in captures.get("ref", ())}
    nodes = [
        (node, kind)
        for kind in ("class", "function", "impl")
        for node in captures.get(kind, ())
    ]
    nodes.sort(key=lambda pair: pair[0].start_byte)
    local_scopes = LANGUAGES[language].local_scopes
    containers: dict[int, int] = {}  # node id -> index in `outline`
    outline: list[Definition] = []
    for node, kind in nodes:
        parent, depth = _place(node, local_scopes, containers)
        if depth < 0 or depth > MAX_DEPTH:
            continue
        name = _name(node, kind)
        if not name:
            continue
        if kind in CONTAINERS:
            containers[node.id] = len(outline)
        signature = _signature(source, node)
        outline.append((node.start_point[0] + 1, depth, parent, kind, name, signature))
    names = list(dict.fromkeys(d[NAME] for d in outline if d[KIND] != "impl"))
    # A file's references to its own names are left out: ranking counts the
    # other files that use a definition.
    own = set(names)
    references = [
        name
        for name in (raw.decode("utf-8", "replace") for raw in referred)
        if name not in own
    ]
    return Tags(outline, names, references)


def _place(node, local_scopes: frozenset[str], containers: dict[int, int]):
    """(index of the enclosing container or -1, depth); depth -1 when the
    definition sits inside a function (a local helper, not listed) or under
    more than MAX_ANCESTORS nodes."""
    parent, depth = -1, 0
    ancestor = node.parent
    for _ in range(MAX_ANCESTORS):
        if ancestor is None:
            return parent, depth
        if ancestor.type in local_scopes:
            return -1, -1
        index = containers.get(ancestor.id)
        if index is not None:
            if parent < 0:
                parent = index
            depth += 1
        ancestor = ancestor.parent
    return -1, -1  # buried deeper than any outline goes


def _name(node, kind: str) -> str:
    field = node.child_by_field_name("name")
    if field is None and kind == "impl":
        field = node.child_by_field_name("type")
    if field is None:
        return ""
    return field.text.decode("utf-8", "replace")


def _signature(source: bytes, node) -> str:
    """The definition's head on one line: from its start to its body (for a
    binding of a function to a name, from the `const`/`let`)."""
    start = node.start_byte
    kind = node.type
    if kind in ("variable_declarator", "type_spec") and node.parent is not None:
        start = node.parent.start_byte  # the `const` or `type` before the name
    head = node
    if kind == "variable_declarator":
        head = node.child_by_field_name("value") or node
    body = head.child_by_field_name("body")
    if body is not None and body.start_byte > start:
        # Up to the last part before the body, so that comments between the
        # head and the body stay out.
        end = start
        for child in head.children:
            if child.start_byte >= body.start_byte:
                break
            if child.type != "comment":
                end = child.end_byte
    else:
        end = source.find(b"\n", start, node.end_byte)
        end = node.end_byte if end < 0 else end
        if kind == "type_spec":  # Go: "type T struct {" without its fields
            brace = source.find(b"{", start, end)
            end = end if brace < 0 else brace
    end = min(end, start + MAX_SIGNATURE_CHARS * 4)
    text = " ".join(source[start:end].decode("utf-8", "replace").split())
    if "( " in text or "[ " in text or " )" in text or " ]" in text:
        text = _CLOSING.sub(r"\1", _OPENING.sub(r"\1", text))
    text = text.rstrip("{:=; ")
    if not text.isprintable():  # control characters never reach the model
        text = "".join(c if c.isprintable() else "?" for c in text)
    if len(text) > MAX_SIGNATURE_CHARS:
        text = text[: MAX_SIGNATURE_CHARS - 1] + "…"
    return text


# What is kept of a file, as the tag cache stores it and as parsing workers
# send it back: its outline marshalled, its names and its references each
# joined by newlines (identifiers hold none). The outline is read only for the
# files a map shows.
Row = tuple[bytes, str, str]


def row(tags: Tags) -> Row:
    return (
        marshal.dumps(tags.outline),
        "\n".join(tags.names),
        "\n".join(tags.references),
    )


def split(text: str) -> list[str]:
    """The names of a row's column."""
    return text.split("\n") if text else []


def loads_outline(data: bytes) -> list[Definition]:
    return marshal.loads(data)
