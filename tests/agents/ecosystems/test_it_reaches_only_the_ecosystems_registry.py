"""The detected setup reaches its ecosystem's registry through the
allow-list proxy, and nothing else: the proxy is opened for those hosts
only (here it refuses even them, so that no test reaches the internet)."""

from __future__ import annotations

import pytest

import agents.setup as jail_setup
from agents.ecosystems import prepare_environment
from integrations.jail.egress import EgressProxy
from tests.agents.ecosystems.projects import PYTEST_PROJECT

pytestmark = pytest.mark.django_db


@pytest.fixture
def proxies(monkeypatch, settings):
    """The host lists the setup's proxies were opened with. Every name
    resolves to nothing, so each connection is refused before any lookup."""
    opened: list[list[str]] = []

    def offline(hosts, **kwargs):
        opened.append(sorted(hosts))
        return EgressProxy(hosts, resolve=lambda host, port: set())

    monkeypatch.setattr(jail_setup, "EgressProxy", offline)
    # pip gives up at once instead of retrying the refused connection.
    settings.CODEX_SANDBOX_ENV = {"PIP_RETRIES": "0", "PIP_TIMEOUT": "5"}
    return opened


def test_a_python_setup_asks_pypi_through_the_proxy_only(remote, jailed, proxies):
    project = remote(PYTEST_PROJECT)
    worktree = project.worktree("T-1")
    _, not_ready = prepare_environment(project.repository, jailed(worktree))
    assert proxies == [["files.pythonhosted.org", "pypi.org"]]
    # pip went to pypi.org through the proxy, which refused it.
    assert "pip install" in not_ready
    assert "refused by the allow-list: pypi.org" in not_ready


def test_the_repositorys_hosts_replace_the_registry(remote, jailed, proxies):
    project = remote(PYTEST_PROJECT, setup_network_hosts="pypi.example.org")
    worktree = project.worktree("T-1")
    _, not_ready = prepare_environment(project.repository, jailed(worktree))
    assert proxies == [["pypi.example.org"]]
    assert "refused by the allow-list: pypi.org is not on" in not_ready
