"""Cases are data: a TOML, JSON or YAML file each, a suite a folder of them,
checked when loaded (what is wrong, in which file)."""

from __future__ import annotations

import json

import pytest

from agents.evaluation.cases import CaseError, choose, load_case, load_suite
from tests.agents.evaluation.conftest import F2P, P2P, PYTEST, case_toml


def test_a_toml_case_holds_its_source_request_lists_and_break(mini_suite):
    (case,) = load_suite(mini_suite)

    assert case.id == "mini-mul" and case.project == "mini"
    assert case.language == "python" and "feature-removed" in case.tags
    assert case.source.kind == "archive"
    assert case.source.archive == mini_suite / "mini-1.0.tar.gz"
    assert case.title == "Add mul(a, b)"
    assert "multiply" in case.description
    assert case.tests.command == PYTEST and case.tests.report == "junit"
    assert list(case.tests.fail_to_pass) == F2P
    assert list(case.tests.pass_to_pass) == P2P
    assert case.break_patch.startswith("--- a/mini.py")
    assert case.is_test_file("tests/test_mini.py")
    assert not case.is_test_file("mini.py")


def _data(source: dict) -> dict:
    return {
        "language": "javascript",
        "source": source,
        "request": {"title": "Add it", "description": "Please add it."},
        "tests": {
            "command": "tape test/*.js",
            "report": "tap",
            "fail_to_pass": ["adds it"],
        },
    }


def test_json_and_yaml_cases_load_like_toml(tmp_path):
    registry = {
        "registry": "npm",
        "package": "left-pad",
        "version": "1.3.0",
        "sha256": "a" * 64,
    }
    (tmp_path / "one.json").write_text(json.dumps(_data(registry)))
    (tmp_path / "two.yaml").write_text(
        "language: python\nsource: {git: repo, commit: abc123}\n"
        "request: {title: Fix it, description: It breaks.}\n"
        "tests: {command: 'pytest --junitxml={junit_xml}', fail_to_pass: [t]}\n"
    )

    one, two = load_suite(tmp_path)

    assert one.id == "one" and one.source.describe() == "npm:left-pad==1.3.0"
    assert one.tests.report == "tap"
    assert two.source.kind == "git" and two.source.git == str(tmp_path / "repo")
    assert two.tests.report == "junit"  # {junit_xml} in the command says so


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"source": {"registry": "pypi", "package": "x", "version": "1"}}, "sha256"),
        ({"source": {"registry": "cpan", "package": "x", "version": "1"}}, "one of"),
        ({"source": {"directory": "a", "git": "b", "commit": "c"}}, "exactly one"),
        ({"tests": {"command": "tape", "fail_to_pass": ["a"]}}, "tests.report"),
        (
            {"tests": {"command": "t", "report": "tap", "fail_to_pass": []}},
            "at least one test",
        ),
        (
            {
                "tests": {
                    "command": "t",
                    "report": "tap",
                    "fail_to_pass": ["a"],
                    "pass_to_pass": ["a"],
                }
            },
            "both lists",
        ),
        ({"request": {"title": "x"}}, "description is required"),
    ],
)
def test_a_case_that_cannot_be_used_says_why(tmp_path, change, message):
    data = {**_data({"directory": "."}), **change}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))

    with pytest.raises(CaseError, match=message) as raised:
        load_case(path)
    assert str(path) in str(raised.value)


def test_a_suite_refuses_two_cases_with_one_id(tmp_path):
    for name in ("a.toml", "b.toml"):
        (tmp_path / name).write_text(case_toml("b" * 64, case_id="same"))

    with pytest.raises(CaseError, match="already used"):
        load_suite(tmp_path)


def test_cases_are_chosen_by_id_and_tag(tmp_path):
    (tmp_path / "a.toml").write_text(case_toml("b" * 64, case_id="a"))
    (tmp_path / "b.toml").write_text(
        case_toml("b" * 64, case_id="b").replace(
            'tags = ["python", "feature-removed"]', 'tags = ["python", "ci"]'
        )
    )
    cases = load_suite(tmp_path)

    assert [c.id for c in choose(cases, ["b"])] == ["b"]
    assert [c.id for c in choose(cases, [], ["ci"])] == ["b"]
    assert [c.id for c in choose(cases, [])] == ["a", "b"]
    with pytest.raises(CaseError, match="no case 'c'"):
        choose(cases, ["c"])
