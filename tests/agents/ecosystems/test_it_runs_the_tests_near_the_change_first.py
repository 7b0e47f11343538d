"""QA runs the tests near the change first, as a check of their own, then
the whole suite; the near tests' failures lead the report. Near: the test
files the branch changes and those named after a module it changes."""

from __future__ import annotations

import json

import pytest

from agents.check_runs import NEARBY, TEST, run_checks
from agents.ecosystems import prepare_environment
from agents.ecosystems.nearby import nearby_command
from agents.roles import qa
from agents.roles.base import RoleContext
from agents.sandbox import Sandbox
from integrations.git.runner import run_git
from tests.agents.ecosystems.projects import commit, node_project, project, write
from tests.factories import make_task

PYTEST = "python3 -B -m pytest -q --junitxml={junit_xml}"


def branch_changing(tmp_path, files: dict[str, str], change: dict[str, str]):
    """A repository holding `files`, then `change` committed: (folder, the
    commit before the change)."""
    folder = project(tmp_path / "p", files)
    base = run_git(["rev-parse", "HEAD"], folder).strip()
    write(folder, change)
    commit(folder, "the change")
    return folder, base


PYTHON = {
    "calc/ops.py": "x = 1\n",
    "calc/other.py": "y = 1\n",
    "tests/test_ops.py": "def test_x():\n    pass\n",
    "tests/test_other.py": "def test_y():\n    pass\n",
    "tests/unit/ops_test.py": "def test_z():\n    pass\n",
}


def test_pytest_gets_the_tests_named_after_a_changed_module(tmp_path):
    folder, base = branch_changing(tmp_path, PYTHON, {"calc/ops.py": "x = 2\n"})
    assert nearby_command(folder, base, PYTEST) == (
        "python3 -B -m pytest -q --junitxml={junit_xml} "
        "tests/test_ops.py tests/unit/ops_test.py"
    )


def test_a_changed_test_file_is_near_itself(tmp_path):
    change = {"tests/test_other.py": "def test_y():\n    assert 1\n"}
    folder, base = branch_changing(tmp_path, PYTHON, change)
    assert nearby_command(folder, base, "pytest").endswith(" tests/test_other.py")


def test_unittest_names_the_files_instead_of_discovering(tmp_path):
    folder, base = branch_changing(tmp_path, PYTHON, {"calc/ops.py": "x = 2\n"})
    command = "python3 -B -m unittest discover -s tests -t ."
    assert nearby_command(folder, base, command) == (
        "python3 -B -m unittest tests/test_ops.py tests/unit/ops_test.py"
    )


def test_no_test_near_the_change_means_no_such_check(tmp_path):
    folder, base = branch_changing(tmp_path, PYTHON, {"README.md": "docs\n"})
    assert nearby_command(folder, base, PYTEST) == ""
    # A runner that cannot be narrowed gets none either.
    folder, base = branch_changing(tmp_path / "x", PYTHON, {"calc/ops.py": "x = 3\n"})
    assert nearby_command(folder, base, "make test") == ""


def test_javascript_tests_sit_next_to_their_module(tmp_path):
    files = {
        **node_project(),
        "src/__tests__/greet.js": "",
        "other.spec.ts": "",
    }
    folder, base = branch_changing(tmp_path, files, {"greet.js": "// changed\n"})
    node = "node --test --test-reporter=spec"
    assert nearby_command(folder, base, node) == (
        f"{node} greet.test.js src/__tests__/greet.js"
    )
    assert nearby_command(folder, base, "npm test -- --x") == (
        "npm test -- --x greet.test.js src/__tests__/greet.js"
    )


def test_npm_test_is_narrowed_only_for_a_runner_that_takes_files(tmp_path):
    files = node_project("./run-all-tests.sh")
    folder, base = branch_changing(tmp_path, files, {"greet.js": "// changed\n"})
    assert nearby_command(folder, base, "npm test") == ""
    package = json.loads(files["package.json"])
    package["scripts"]["test"] = "jest --coverage"
    jest = {**files, "package.json": json.dumps(package)}
    folder, base = branch_changing(tmp_path / "j", jest, {"greet.js": "// again\n"})
    assert nearby_command(folder, base, "npm test") == "npm test -- greet.test.js"


def test_go_tests_the_changed_packages(tmp_path):
    files = {"go.mod": "module m\n", "a/b/x.go": "package b\n", "c/y.go": "package c\n"}
    folder, base = branch_changing(tmp_path, files, {"a/b/x.go": "package b\n// x\n"})
    assert nearby_command(folder, base, "go test ./...") == "go test ./a/b"


def test_cargo_runs_the_changed_integration_test_else_filters(tmp_path):
    files = {"Cargo.toml": "", "src/parser.rs": "", "tests/api.rs": ""}
    folder, base = branch_changing(tmp_path, files, {"tests/api.rs": "// x\n"})
    assert nearby_command(folder, base, "cargo test") == "cargo test --test api"
    folder, base = branch_changing(tmp_path / "s", files, {"src/parser.rs": "// x\n"})
    assert nearby_command(folder, base, "cargo test") == "cargo test -- parser"


BROKEN = {
    "zeta.py": "def twice(x):\n    return x * 3\n",
}
SUITE = {
    "pyproject.toml": "[tool.pytest.ini_options]\n",
    "zeta.py": "def twice(x):\n    return x * 2\n",
    "tests/test_alpha.py": "from zeta import twice\n\n\ndef test_uses_zeta():\n"
    "    assert twice(1) == 2\n",
    "tests/test_zeta.py": "from zeta import twice\n\n\ndef test_twice():\n"
    "    assert twice(2) == 4\n",
}


@pytest.mark.django_db
def test_qa_runs_the_near_tests_first_and_reports_their_failures_first(remote, jailed):
    project = remote(SUITE, setup_command="true")
    worktree = project.worktree("T-1")
    write(worktree, BROKEN)
    commit(worktree, "break twice")
    jail, not_ready = prepare_environment(project.repository, jailed(worktree))
    assert not_ready == ""

    checks = run_checks(Sandbox(worktree, jail=jail), project.repository)

    assert [c.kind for c in checks] == [NEARBY, TEST]
    near, suite = checks
    assert near.command.endswith(" tests/test_zeta.py") and near.status == "failed"
    assert near.junit["tests_total"] == 1 and suite.junit["tests_total"] == 2
    context = RoleContext(task=make_task(project.repository), checks=checks)
    result = {
        "acceptance_criteria": [
            {"criterion": "c", "status": "passed", "evidence": "e"}
        ],
        "recommendation": "approve",
        "summary": "ok",
    }
    verification = qa.to_phase_result(result, context).verification
    names = [f["name"] for f in verification["failures"]]
    # The suite lists alpha first; the test near the change leads the report.
    assert names == ["tests.test_zeta::test_twice", "tests.test_alpha::test_uses_zeta"]
    assert verification["tests_total"] == 2
    assert verification["recommendation"] == "request_changes"
    kinds = [c["kind"] for c in verification["feedback"]["checks"]]
    assert kinds == [NEARBY, TEST]
    # The near run is judged by the suite: not listed again as its own failure.
    assert not any(f.get("check") == NEARBY for f in verification["failures"])
    assert "pre_existing_failures" not in verification["feedback"]
    prompt = qa.checks_prompt(checks)
    assert prompt.index("tests near the change") < prompt.index("The test command")
