"""QA's real checks: which commands run, what their JUnit XML says (read
safely), and how the real runs overrule the agent in the report."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agents.roles import qa
from agents.roles.base import RoleContext
from agents.sandbox import Sandbox
from tests.factories import make_repository, make_task

PYTEST_JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="1"
 skipped="1" tests="5" time="0.05" timestamp="2026-11-22T05:00:00" hostname="h">
<testcase classname="test_calc" name="test_add" time="0.001" />
<testcase classname="test_calc" name="test_mul" time="0.001"><failure
 message="assert 5 == 6&#10; +  where 5 = mul(2, 3)">def test_mul():
&gt;       assert mul(2, 3) == 6
E       assert 5 == 6

test_calc.py:9: AssertionError</failure></testcase>
<testcase classname="test_calc" name="test_div" time="0.001"><error
 message="failed on setup with &quot;fixture 'db' not found&quot;">file
 test_calc.py, line 12</error></testcase>
<testcase classname="test_calc" name="test_pow" time="0.000"><skipped
 type="pytest.skip" message="later">test_calc.py:15: later</skipped></testcase>
<testcase classname="test_calc.TestSub" name="test_sub[1-2]" time="0.001" />
</testsuite></testsuites>
"""

LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>
<testsuites><testsuite><testcase classname="a" name="&lol2;"/></testsuite></testsuites>
"""

# The billion laughs: nine levels of ten, a gigabyte of "lol" if expanded.
BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol0 "lol">'
    + "".join(
        f'<!ENTITY lol{level} "' + f"&lol{level - 1};" * 10 + '">'
        for level in range(1, 10)
    )
    + ']>\n<testsuites><testsuite><testcase name="&lol9;"/></testsuite></testsuites>\n'
)

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE testsuites [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<testsuites><testsuite><testcase name="t"><failure message="&secret;"/></testcase>
</testsuite></testsuites>
"""

# A DTD and nothing else: no entity declared, still refused.
EXTERNAL_DTD = """<?xml version="1.0"?>
<!DOCTYPE testsuites SYSTEM "file:///etc/passwd">
<testsuites><testsuite><testcase name="t"/></testsuite></testsuites>
"""


def write(tmp_path: Path, content: str | bytes, name: str = "junit.xml") -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


# -- JUnit XML ------------------------------------------------------------------


def test_junit_counts_and_failures_of_a_pytest_report(tmp_path):
    results = qa.parse_junit(write(tmp_path, PYTEST_JUNIT))

    assert (
        results["tests_passed"],
        results["tests_failed"],
        results["tests_skipped"],
        results["tests_total"],
    ) == (2, 2, 1, 5)
    mul, div = results["failures"]
    assert mul["name"] == "test_calc::test_mul"
    assert mul["error"].startswith("assert 5 == 6")
    assert (mul["file"], mul["line"]) == ("test_calc.py", 9)
    assert div["name"] == "test_calc::test_div"
    assert "fixture 'db' not found" in div["error"]


def test_junit_with_a_doctype_is_refused_before_any_entity_expands(tmp_path):
    with pytest.raises(qa.JUnitError, match="DOCTYPE"):
        qa.parse_junit(write(tmp_path, LAUGHS))


@pytest.mark.parametrize(
    "document",
    [BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_DTD],
    ids=["billion-laughs", "external-entity", "dtd"],
)
def test_junit_entities_external_references_and_dtds_are_refused(tmp_path, document):
    with pytest.raises(qa.JUnitError, match="has a DOCTYPE .*; refused") as refused:
        qa.parse_junit(write(tmp_path, document))

    assert "root:" not in str(refused.value)  # nothing of /etc/passwd read


def test_junit_refusals_name_what_the_safe_parser_refused(tmp_path, monkeypatch):
    # Should the DOCTYPE ever pass, the entity checks still stand and say why.
    from defusedxml import ElementTree

    from agents import check_reports

    def allowing_dtds(data, **options):
        return ElementTree.fromstring(data, **{**options, "forbid_dtd": False})

    monkeypatch.setattr(check_reports, "fromstring", allowing_dtds)
    with pytest.raises(qa.JUnitError, match="declares an entity; refused"):
        qa.parse_junit(write(tmp_path, BILLION_LAUGHS))
    with pytest.raises(qa.JUnitError, match="declares an entity; refused"):
        qa.parse_junit(write(tmp_path, EXTERNAL_ENTITY))


def test_junit_doctype_is_refused_in_any_encoding(tmp_path):
    # UTF-16 hides "<!DOCTYPE" from a byte search; the parser still sees it.
    data = LAUGHS.replace(
        '<?xml version="1.0"?>', '<?xml version="1.0" encoding="utf-16"?>'
    )
    with pytest.raises(qa.JUnitError, match="DOCTYPE"):
        qa.parse_junit(write(tmp_path, data.encode("utf-16")))


def test_junit_larger_than_the_cap_is_not_read(tmp_path):
    path = write(tmp_path, PYTEST_JUNIT)
    with pytest.raises(qa.JUnitError, match="larger than 100 bytes"):
        qa.parse_junit(path, limit=100)


def test_junit_through_a_symlink_is_refused(tmp_path):
    secret = write(tmp_path, PYTEST_JUNIT, "elsewhere.xml")
    link = tmp_path / "junit.xml"
    link.symlink_to(secret)
    with pytest.raises(qa.JUnitError, match="cannot be opened"):
        qa.parse_junit(link)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("<html><body/></html>", "not JUnit XML"),
        ("<testsuites><testsuite>", "not well-formed"),
    ],
)
def test_junit_that_is_not_junit_is_refused(tmp_path, content, message):
    with pytest.raises(qa.JUnitError, match=message):
        qa.parse_junit(write(tmp_path, content))


def test_a_missing_junit_file_says_so(tmp_path):
    with pytest.raises(qa.JUnitError, match="wrote no JUnit XML"):
        qa.parse_junit(tmp_path / "junit.xml")


# -- which commands run ------------------------------------------------------------


@pytest.mark.django_db
def test_commands_come_from_the_repository_else_the_settings(settings):
    settings.CODEX_TEST_COMMAND = "pytest -q"
    settings.CODEX_TEST_COMMANDS = {}
    settings.CODEX_LINT_COMMAND = "ruff check ."
    settings.CODEX_TYPE_CHECK_COMMAND = ""
    repository = make_repository()

    assert qa.configured_commands(repository) == [
        ("test", "pytest -q"),
        ("lint", "ruff check ."),
    ]

    repository.test_command = "python -m pytest --junitxml={junit_xml}"
    repository.type_check_command = "mypy src"
    assert qa.configured_commands(repository) == [
        ("test", "python -m pytest --junitxml={junit_xml}"),
        ("lint", "ruff check ."),
        ("type_check", "mypy src"),
    ]


# -- running them for real ---------------------------------------------------------


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text("import os\n\n\ndef mul(a, b):\n    return a + b\n")
    (root / "test_calc.py").write_text(
        "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n"
        "def test_zero():\n    assert mul(0, 0) == 0\n"
    )
    return root


@pytest.fixture
def sandbox(project, settings) -> Sandbox:
    settings.CODEX_SANDBOX_PATH = f"{Path(sys.executable).parent}:{os.defpath}"
    return Sandbox(project)


def test_the_test_command_writes_junit_outside_the_worktree(sandbox, project):
    check = qa.run_check(
        sandbox,
        "test",
        "python -B -m pytest -q -p no:cacheprovider --junitxml={junit_xml}",
    )

    assert check.status == "failed" and check.exit_code == 1
    assert check.junit is not None
    assert (check.junit["tests_passed"], check.junit["tests_failed"]) == (1, 1)
    assert check.junit["failures"][0]["name"] == "test_calc::test_mul"
    # Nothing was left in the worktree, and the temporary folder is gone.
    assert sorted(p.name for p in project.iterdir() if p.suffix == ".xml") == []
    written = check.output.split("generated xml file: ")[-1].split()[0]
    assert not Path(written).is_relative_to(project)
    assert not Path(written).exists()


def test_a_command_that_cannot_run_is_reported_not_raised(sandbox):
    check = qa.run_check(sandbox, "lint", "eslint .")
    assert check.status == "not_run"
    assert "not installed" in check.not_run


def test_a_test_command_without_junit_is_read_from_its_output(sandbox):
    check = qa.run_check(sandbox, "test", "python -B -m pytest -q -p no:cacheprovider")
    results = qa.test_results(check)
    assert check.junit is None
    assert (results["tests_passed"], results["tests_failed"]) == (1, 1)
    assert results["failures"][0]["name"] == "test_calc.py::test_mul"


# -- the report ---------------------------------------------------------------------


def agent_result(**overrides):
    return {
        "acceptance_criteria": [
            {
                "criterion": "mul works",
                "status": "passed",
                "evidence": "test_mul passes",
            }
        ],
        "recommendation": "approve",
        "summary": "Looks fine.",
        **overrides,
    }


def passing_test() -> qa.CheckRun:
    return qa.CheckRun(
        kind="test",
        command="pytest",
        exit_code=0,
        output="",
        junit={
            "tests_passed": 3,
            "tests_failed": 0,
            "tests_skipped": 0,
            "tests_total": 3,
            "failures": [],
        },
    )


@pytest.mark.django_db
def test_a_failing_lint_fails_verification_with_its_output(sandbox, settings):
    settings.CODEX_QA_CHECKS_BLOCK = True
    lint = qa.run_check(sandbox, "lint", "ruff check --no-cache --isolated calc.py")
    assert lint.status == "failed"
    context = RoleContext(task=make_task(), checks=[passing_test(), lint])

    verification = qa.to_phase_result(agent_result(), context).verification

    assert verification["recommendation"] == "request_changes"
    assert verification["tests_passed"] == 3
    failure = verification["failures"][-1]
    assert failure["name"] == "lint: ruff check --no-cache --isolated calc.py"
    assert failure["check"] == "lint" and "F401" in failure["error"]
    assert any("lint command" in item for item in verification["feedback"]["items"])
    assert [c["status"] for c in verification["feedback"]["checks"]] == [
        "passed",
        "failed",
    ]
    assert "F401" in verification["feedback"]["check_outputs"]["lint"]


@pytest.mark.django_db
def test_with_checks_not_blocking_a_failing_type_check_is_only_reported(settings):
    settings.CODEX_QA_CHECKS_BLOCK = False
    type_check = qa.CheckRun(
        kind="type_check", command="mypy .", exit_code=1, output="error: x"
    )
    context = RoleContext(task=make_task(), checks=[passing_test(), type_check])

    verification = qa.to_phase_result(agent_result(), context).verification

    assert verification["recommendation"] == "approve"
    assert verification["failures"][0]["name"] == "type-check: mypy ."
    assert verification["feedback"]["checks"][1]["status"] == "failed"


@pytest.mark.django_db
def test_the_real_test_run_overrules_a_criterion_citing_a_failing_test(sandbox):
    test = qa.run_check(
        sandbox,
        "test",
        "python -B -m pytest -q -p no:cacheprovider --junitxml={junit_xml}",
    )
    context = RoleContext(task=make_task(), checks=[test])

    verification = qa.to_phase_result(agent_result(), context).verification

    assert verification["recommendation"] == "request_changes"
    criterion = verification["acceptance_criteria"][0]
    assert criterion["status"] == "failed"
    assert criterion["evidence"].startswith("overruled: test_mul failed")
    assert verification["feedback"]["priority"] == "high"
    assert verification["feedback"]["summary"].startswith("1 test(s) failed")


@pytest.mark.django_db
def test_criteria_need_a_pass_and_the_older_met_form_is_read():
    context = RoleContext(task=make_task(), checks=[passing_test()])
    result = agent_result(
        acceptance_criteria=[
            {"criterion": "a", "met": True, "evidence": "test_a"},
            {"criterion": "b", "status": "blocked", "evidence": "cannot reach it"},
        ]
    )

    verification = qa.to_phase_result(result, context).verification

    assert [c["status"] for c in verification["acceptance_criteria"]] == [
        "passed",
        "blocked",
    ]
    assert "met" not in verification["acceptance_criteria"][0]
    assert verification["recommendation"] == "request_changes"


def test_unrunnable_names_each_command_that_could_not_start():
    checks = [
        passing_test(),
        qa.CheckRun(kind="lint", command="eslint .", not_run="'eslint' is not allowed"),
    ]
    reason = qa.unrunnable(checks)
    assert reason.startswith("the lint command `eslint .` could not run: 'eslint'")
    assert "verification commands" in reason
    assert qa.unrunnable([passing_test()]) == ""
