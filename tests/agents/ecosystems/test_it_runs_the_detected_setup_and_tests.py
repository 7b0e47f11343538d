"""What detection derives runs for real, in the jail, with no network: a
unittest project (a runner that is not pytest), a pytest project, a node
project installed by `npm ci` from its lock file, a Rust crate, a Go module
where Go is installed; QA's checks use the detected test command."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agents import check_runs
from agents.check_runs import TEST, run_checks
from agents.ecosystems import prepare_environment
from agents.sandbox import Sandbox
from tests.agents.ecosystems.projects import (
    GO_PROJECT,
    PYTEST_PROJECT,
    RUST_PROJECT,
    UNITTEST_PROJECT,
    node_project,
)

pytestmark = pytest.mark.django_db


def set_up_and_check(remote, jailed, files, **fields):
    """The first step of a task: its worktree, its environment, then QA's
    checks on it; (the repository, the worktree, the check runs)."""
    project = remote(files, **fields)
    worktree = project.worktree("T-1")
    jail, not_ready = prepare_environment(project.repository, jailed(worktree))
    assert not_ready == ""
    sandbox = Sandbox(worktree, jail=jail)
    return project.repository, worktree, run_checks(sandbox, project.repository)


def test_a_unittest_project_is_tested_by_unittest(remote, jailed):
    repository, worktree, checks = set_up_and_check(remote, jailed, UNITTEST_PROJECT)
    [test] = checks
    assert test.command == "python3 -B -m unittest discover -s tests -t ."
    assert test.ok, test.output
    assert "Ran 1 test" in test.output
    # The venv the setup made is the one the tests ran with.
    assert (worktree / ".venv" / "bin" / "python3").exists()
    assert repository.detected_environment["runner"] == "unittest"


def test_a_failing_unittest_fails_the_check(remote, jailed):
    files = {**UNITTEST_PROJECT, "shapes.py": "def area(w, h):\n    return w + h\n"}
    _, _, [test] = set_up_and_check(remote, jailed, files)
    assert test.status == "failed" and "FAILED (failures=1)" in test.output


def test_a_pytest_project_writes_junit(remote, jailed):
    # The derived setup would install pytest from PyPI (no network in tests):
    # the repository's own setup command wins, and pytest comes from this
    # venv, on CODEX_SANDBOX_PATH.
    _, _, [test] = set_up_and_check(
        remote, jailed, PYTEST_PROJECT, setup_command="true"
    )
    assert test.ok, test.output
    assert test.junit is not None and test.junit["tests_passed"] == 1


def test_a_node_project_is_installed_by_npm_ci_and_tested_by_node(remote, jailed):
    if not shutil.which("npm"):
        pytest.skip("npm is not installed on this machine")
    _, worktree, [test] = set_up_and_check(remote, jailed, node_project())
    assert (worktree / "node_modules" / "helper").is_symlink()
    assert test.ok, test.output
    assert test.junit is not None
    assert check_runs.test_results(test)["tests_passed"] == 1


def test_a_rust_crate_is_tested_by_cargo(remote, jailed, settings):
    cargo = shutil.which("cargo")
    if not cargo:
        pytest.skip("cargo is not installed on this machine")
    bin_dir = Path(cargo).resolve().parent
    rustup = Path.home() / ".rustup"
    settings.CODEX_SANDBOX_READONLY_PATHS = [
        *settings.CODEX_SANDBOX_READONLY_PATHS,
        str(bin_dir.parent),
        str(rustup),
    ]
    settings.CODEX_SANDBOX_ENV = {"RUSTUP_HOME": str(rustup)}
    jail_path = f"{bin_dir}:{settings.CODEX_SANDBOX_PATH}"
    settings.CODEX_SANDBOX_PATH = jail_path
    _, _, [test] = set_up_and_check(remote, jailed, RUST_PROJECT)
    assert test.kind == TEST and test.command == "cargo test"
    assert test.ok, test.output
    assert "test tests::adds ... ok" in test.output


def test_a_go_module_is_tested_by_go_test(remote, jailed):
    if not shutil.which("go"):
        pytest.skip("go is not installed on this machine: detection alone is tested")
    files = {k: v for k, v in GO_PROJECT.items() if k != "go.sum"}
    files["go.mod"] = "module example.com/calc\n\ngo 1.21\n"
    _, _, [test] = set_up_and_check(remote, jailed, files)
    assert test.command == "go test ./..." and test.ok, test.output
