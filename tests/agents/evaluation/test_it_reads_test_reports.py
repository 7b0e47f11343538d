"""Test results into a status map: JUnit XML (pytest's node ids when it names
the file) and TAP (tape's test headings)."""

from __future__ import annotations

import pytest

from agents.evaluation.reports import ReportError, junit_status, tap_status

PYTEST_XUNIT1 = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.test_x" file="tests/test_x.py" line="3" name="test_a"/>
<testcase classname="tests.test_x.TestY" file="tests/test_x.py" name="test_b[1-2]">
  <failure message="assert 1 == 2">boom</failure></testcase>
<testcase classname="tests.test_x.TestY" file="tests/test_x.py" name="test_c">
  <skipped message="no"/></testcase>
<testcase classname="tests.test_broken" name="tests.test_broken">
  <error message="collection failure"/></testcase>
<testcase classname="test" name="multiplies"/>
</testsuite></testsuites>"""


def test_junit_gives_pytest_node_ids_and_outcomes():
    assert junit_status(PYTEST_XUNIT1) == {
        "tests/test_x.py::test_a": "passed",
        "tests/test_x.py::TestY::test_b[1-2]": "failed",
        "tests/test_x.py::TestY::test_c": "skipped",
        "tests.test_broken::tests.test_broken": "failed",
        "test::multiplies": "passed",
    }


def test_junit_with_a_doctype_is_refused():
    with pytest.raises(ReportError, match="cannot be read"):
        junit_status(
            b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]>'
            b"<testsuites>&a;</testsuites>"
        )


TAPE = """TAP version 13
# parses a simple string
ok 1 should be deep equal
ok 2 should be deep equal
# arrays
ok 3 should be equal
not ok 4 should be equal
  ---
    operator: equal
  ...
# skipped one
ok 5 not now # SKIP
# arrays
ok 6 again

1..6
# tests 6
# pass  5
# fail  1
"""


def test_tap_fails_a_test_with_a_failing_assertion():
    assert tap_status(TAPE) == {
        "parses a simple string": "passed",
        "arrays": "failed",
        "skipped one": "skipped",
        "arrays (2)": "passed",
    }


def test_a_tap_stream_that_stops_fails_the_test_it_was_in():
    stopped = "TAP version 13\n# first\nok 1 fine\n# second\nok 2 fine\n"

    assert tap_status(stopped) == {"first": "passed", "second": "failed"}


def test_a_leading_plan_counts_the_assertions():
    assert tap_status("1..2\n# one\nok 1 a\nok 2 b\n") == {"one": "passed"}
    assert tap_status("1..3\n# one\nok 1 a\nok 2 b\n") == {"one": "failed"}
