"""Test results read into a status map, test id -> passed, failed or skipped
(docs/eval.md#test-ids).

JUnit XML (pytest, node --test, mocha's xunit reporter) is written by the
project's own code, so it is read like QA reads it: size-capped and parsed by
defusedxml with DTDs and entities refused. A test's id is pytest's node id
when the XML names the test's file (pytest's `-o junit_family=xunit1`:
tests/test_x.py::TestClass::test_y), else `classname::name`. TAP (tape, node's
default reporter) gives each test's name as its id; a test fails when one of
its assertions does, and a stream that stops before its plan marks the test
it was in as failed.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
JUNIT_MAX_BYTES = 20_000_000


class ReportError(ValueError):
    """Results that cannot be read."""


# -- JUnit XML -----------------------------------------------------------------------


def _node_id(classname: str, name: str, file: str) -> str:
    """pytest's node id from an xunit1 test case, else classname::name."""
    if file:
        module = PurePosixPath(file).with_suffix("").as_posix().replace("/", ".")
        if classname == module:
            return f"{file}::{name}"
        if classname.startswith(module + "."):
            inner = classname[len(module) + 1 :].replace(".", "::")
            return f"{file}::{inner}::{name}"
    return f"{classname}::{name}" if classname else name


def junit_status(data: bytes) -> dict[str, str]:
    """The status map of a JUnit XML document."""
    if len(data) > JUNIT_MAX_BYTES:
        raise ReportError(f"the JUnit XML is larger than {JUNIT_MAX_BYTES} bytes")
    try:
        root = fromstring(
            data, forbid_dtd=True, forbid_entities=True, forbid_external=True
        )
    except (DefusedXmlException, SyntaxError) as exc:
        raise ReportError(f"the JUnit XML cannot be read: {exc}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise ReportError(f"not JUnit XML (root element {root.tag!r})")
    status: dict[str, str] = {}
    for case in root.iter("testcase"):
        test_id = _node_id(
            case.get("classname", ""), case.get("name", "?"), case.get("file", "")
        )
        outcome = PASSED
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = FAILED
                break
            if child.tag == "skipped":
                outcome = SKIPPED
        # A test reported twice (a teardown error after a pass) fails once.
        if status.get(test_id) != FAILED:
            status[test_id] = outcome
    return status


def read_junit(path: Path) -> dict[str, str]:
    """The status map of a JUnit XML file; ReportError when there is none."""
    if path.is_symlink() or not path.is_file():
        raise ReportError("the test command wrote no JUnit XML")
    with path.open("rb") as handle:
        data = handle.read(JUNIT_MAX_BYTES + 1)
    return junit_status(data)


# -- TAP -----------------------------------------------------------------------------

_ASSERT = re.compile(r"^\s*(not ok|ok)\b\s*\d*\s*(?:-\s*)?(.*)$")
_PLAN = re.compile(r"^\s*1\.\.(\d+)")
_DIRECTIVE = re.compile(r"#\s*(SKIP|TODO)\b", re.IGNORECASE)


def tap_status(output: str) -> dict[str, str]:
    """The status map of a TAP stream whose tests are `# name` headings
    followed by their assertions (tape's form)."""
    status: dict[str, str] = {}
    current = ""
    ended = False
    planned = 0  # a plan given before the assertions
    assertions = 0
    for line in output.splitlines():
        plan = _PLAN.match(line)
        if plan:
            if status:
                ended = True  # a trailing plan: what follows is the summary
                break
            planned = int(plan[1])
            continue
        stripped = line.strip()
        if stripped.lower().startswith("bail out!"):
            break
        if stripped.startswith("#"):
            name = stripped[1:].strip()
            if not name:
                continue
            current = name
            number = 2
            while current in status:
                current = f"{name} ({number})"
                number += 1
            status[current] = PASSED
            continue
        match = _ASSERT.match(line)
        if match is None or not current:
            continue
        assertions += 1
        directive = _DIRECTIVE.search(match[2] or "")
        if match[1] == "not ok" and directive is None:
            status[current] = FAILED
        elif (
            directive is not None
            and directive[1].upper() == "SKIP"
            and status[current] == PASSED
        ):
            status[current] = SKIPPED
    if planned and assertions >= planned:
        ended = True
    if not ended and current:
        # The stream stopped inside this test: it did not finish.
        status[current] = FAILED
    return status
