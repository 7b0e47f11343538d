"""Explicit repository settings always win; detection fills only what is
blank (the setup, its hosts and variables, the test command), and the last
detection is stored on the repository with its commit."""

from __future__ import annotations

import pytest

from agents.check_runs import test_command as effective_test_command
from agents.ecosystems.environment import environment_for
from codex.repositories.models import Repository
from tests.agents.ecosystems.projects import RUST_PROJECT, node_project

pytestmark = pytest.mark.django_db

WITH_DEPS = {
    **RUST_PROJECT,
    "Cargo.toml": RUST_PROJECT["Cargo.toml"] + '\n[dependencies]\nserde = "1"\n',
}


def everything(program: str) -> str:
    return f"/usr/bin/{program}"


def test_a_blank_repository_gets_the_detected_setup_hosts_and_variables(remote):
    project = remote(WITH_DEPS)
    worktree = project.worktree("T-1")
    environment = environment_for(project.repository, worktree, everything)
    assert environment.setup_command == "cargo fetch"
    assert environment.setup_source == "detected"
    assert environment.setup_hosts == [
        "crates.io",
        "index.crates.io",
        "static.crates.io",
    ]
    assert environment.env == {"CARGO_HOME": "/workspace/.codex-deps/cargo"}
    stored = Repository.objects.get(pk=project.repository.pk)
    assert stored.detected("setup_command") == "cargo fetch"
    assert stored.detected("test_command") == "cargo test"
    assert stored.detected_at_commit == environment.detection.commit


def test_the_repositorys_own_setup_keeps_its_own_network_and_variables(remote):
    project = remote(WITH_DEPS, setup_command="make deps")
    environment = environment_for(project.repository, project.worktree("T-1"))
    assert environment.setup_command == "make deps"
    assert environment.setup_source == "repository"
    assert environment.setup_hosts == [] and environment.env == {}


def test_named_hosts_replace_the_detected_ones(remote):
    project = remote(WITH_DEPS, setup_network_hosts="crates.example.com")
    environment = environment_for(
        project.repository, project.worktree("T-1"), everything
    )
    assert environment.setup_command == "cargo fetch"
    assert environment.setup_hosts == ["crates.example.com"]


def test_the_test_command_is_the_repositorys_then_the_settings_then_detected(
    remote, settings
):
    project = remote(node_project())
    repository = project.repository
    environment_for(repository, project.worktree("T-1"))
    settings.CODEX_TEST_COMMAND = "make check"
    assert effective_test_command(repository).startswith("npm test -- ")
    settings.CODEX_TEST_COMMANDS = {repository.full_name: "npm run ci"}
    assert effective_test_command(repository) == "npm run ci"
    repository.test_command = "npx jest"
    assert effective_test_command(repository) == "npx jest"
    repository.test_command = ""
    settings.CODEX_TEST_COMMANDS = {}
    repository.detected_environment = {}
    assert effective_test_command(repository) == "make check"


def test_the_detection_is_written_only_when_it_changes(remote):
    project = remote(node_project())
    repository = project.repository
    environment_for(repository, project.worktree("T-1"))
    Repository.objects.filter(pk=repository.pk).update(detected_at_commit="kept")
    project.change({"README.md": "no manifest changed\n"})
    environment_for(repository, project.worktree("T-2"))
    assert Repository.objects.get(pk=repository.pk).detected_at_commit == "kept"
    project.change({"package.json": '{"name": "greeter"}'})
    later = environment_for(repository, project.worktree("T-3"))
    stored = Repository.objects.get(pk=repository.pk)
    assert stored.detected_at_commit == later.detection.commit
    assert stored.detected("setup_command") == ""


def test_an_unchanged_detection_reads_and_writes_nothing(
    remote, django_assert_num_queries
):
    # Each step detects again; the repository it read at the step's start
    # says whether anything changed, so a step pays no query for it.
    project = remote(node_project())
    repository = project.repository
    environment_for(repository, project.worktree("T-1"))
    with django_assert_num_queries(0):
        environment_for(repository, project.worktree("T-2"))
