"""Test reports read safely: JUnit XML written by a repository's own test
command (size-capped, no symlink followed, parsed by defusedxml with DTDs,
entities and external references refused), and pytest's summary lines when
there is no JUnit XML. Both give the verification report's counts and failing
tests (agents.roles.qa)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element, ParseError

from defusedxml import (
    DefusedXmlException,
    DTDForbidden,
    EntitiesForbidden,
    ExternalReferenceForbidden,
)
from defusedxml.ElementTree import fromstring

JUNIT_MAX_BYTES = 5_000_000
MAX_FAILURES = 100
ERROR_CHARS = 1000


# -- JUnit XML ----------------------------------------------------------------------


class JUnitError(Exception):
    """A JUnit XML file that is missing, too large or refused."""


_LOCATION = re.compile(r"^(?P<file>[^\s:]+\.\w+):(?P<line>\d+):", re.MULTILINE)


def _read_capped(path: Path, limit: int) -> bytes:
    """The file's bytes: a regular file (no symlink followed), at most `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise JUnitError("the test command wrote no JUnit XML") from None
    except OSError as exc:
        raise JUnitError(f"the JUnit XML cannot be opened: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise JUnitError("the JUnit XML is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise JUnitError(f"the JUnit XML is larger than {limit} bytes; not read")
    return data


# Why defusedxml refused a document, in the report's words.
_REFUSALS: dict[type[DefusedXmlException], str] = {
    DTDForbidden: "has a DOCTYPE (no DTD, so no entity, is allowed)",
    EntitiesForbidden: "declares an entity",
    ExternalReferenceForbidden: "refers to an external entity",
}


def _parse_xml(data: bytes) -> Element:
    """Parse with defusedxml in whatever encoding the document claims,
    refusing any DOCTYPE (so no entity can be declared, let alone expanded,
    and no external entity or DTD is fetched)."""
    try:
        return fromstring(
            data, forbid_dtd=True, forbid_entities=True, forbid_external=True
        )
    except DefusedXmlException as exc:
        reason = _REFUSALS.get(type(exc), "is refused by the safe parser")
        raise JUnitError(f"the JUnit XML {reason}; refused") from None
    except ParseError as exc:
        raise JUnitError(f"the JUnit XML is not well-formed: {exc}") from None


def _case_outcome(case: Element) -> tuple[str, Element | None]:
    """passed, failed (with its failure or error element) or skipped."""
    outcome = "passed"
    for child in case:
        if child.tag in ("failure", "error"):
            return "failed", child
        if child.tag == "skipped":
            outcome = "skipped"
    return outcome, None


def _failure(case: Element, problem: Element) -> dict[str, Any]:
    """One failing test: its name, error message and, when known, the file
    and line (the test case's own, else the last location in the text)."""
    classname, name = case.get("classname", ""), case.get("name", "?")
    text = problem.text or ""
    message = problem.get("message") or text.strip().splitlines()[-1:] or [""]
    if isinstance(message, list):
        message = message[0]
    failure: dict[str, Any] = {
        "name": f"{classname}::{name}" if classname else name,
        "error": message.strip()[:ERROR_CHARS],
    }
    locations = list(_LOCATION.finditer(text))
    location = locations[-1] if locations else None
    if case.get("file"):
        failure["file"] = case.get("file")
        if (case.get("line") or "").isdigit():
            failure["line"] = int(case.get("line"))
    elif location is not None:
        failure["file"] = location["file"]
        failure["line"] = int(location["line"])
    return failure


def parse_junit(path: Path, *, limit: int = JUNIT_MAX_BYTES) -> dict[str, Any]:
    """Counts and failing tests from a JUnit XML file written by untrusted
    code: size-capped, symlinks refused, DOCTYPE and entities refused.
    Returns the report's tests_passed, tests_failed (failures and errors),
    tests_skipped, tests_total and failures [{name, error, file, line}]."""
    root = _parse_xml(_read_capped(path, limit))
    if root.tag not in ("testsuites", "testsuite"):
        raise JUnitError(f"not JUnit XML (root element {root.tag!r})")
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures: list[dict[str, Any]] = []
    for case in root.iter("testcase"):
        outcome, problem = _case_outcome(case)
        counts[outcome] += 1
        if problem is not None and len(failures) < MAX_FAILURES:
            failures.append(_failure(case, problem))
    return {
        "tests_passed": counts["passed"],
        "tests_failed": counts["failed"],
        "tests_skipped": counts["skipped"],
        "tests_total": sum(counts.values()),
        "failures": failures,
    }


# -- pytest's text output (no JUnit XML) -----------------------------------------

_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)


def parse_pytest(output: str) -> dict[str, Any]:
    """Counts and failures from pytest's summary lines (-q or not)."""
    counts = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
    summary = ""
    for line in reversed(output.splitlines()):
        if _COUNT.search(line):
            summary = line
            break
    for number, word in _COUNT.findall(summary):
        key = {"errors": "error", "xfailed": "skipped", "xpassed": "passed"}.get(
            word, word
        )
        counts[key] += int(number)
    failures = [
        {"name": name, "error": (error or "").strip()[:ERROR_CHARS]}
        for name, error in _FAILED.findall(output)
    ][:MAX_FAILURES]
    return {
        "tests_passed": counts["passed"],
        "tests_failed": counts["failed"] + counts["error"],
        "tests_skipped": counts["skipped"],
        "tests_total": sum(counts.values()),
        "failures": failures,
    }
