"""The command jail (docs/jail.md) and the commands run in it: tests, lint
and type checks."""

from __future__ import annotations

import ipaddress

from django.core.exceptions import ImproperlyConfigured

from codex.env import env_bool, env_choice, env_int, env_list, env_pairs, env_str
from codex.settings.base import VAR_DIR

# How agents run commands in a task's worktree: PATH for the sandbox (the
# test tools must be on it), the test command (per repository full_name or url
# in CODEX_TEST_COMMANDS), how pull requests merge, and whether a person must
# approve the release first.
CODEX_SANDBOX_PATH = env_str("CODEX_SANDBOX_PATH", "") or None
# The command jail every command run on a repository's behalf goes through
# (docs/jail.md): auto (bubblewrap where it works, else steps that must run a
# command escalate), bubblewrap, docker, podman, or none (unjailed: warned).
CODEX_SANDBOX = env_choice(
    "CODEX_SANDBOX", "auto", ("auto", "bubblewrap", "docker", "podman", "none")
)
# Limits of one jailed command. The wall time is an agent's command's unless
# the call asks for another: shorter, or longer up to the maximum (and the
# role's time budget, agents/shell.py).
CODEX_SANDBOX_COMMAND_TIMEOUT = env_int(
    "CODEX_SANDBOX_COMMAND_TIMEOUT", 120, minimum=1, maximum=3600
)
CODEX_SANDBOX_MAX_COMMAND_TIMEOUT = env_int(
    "CODEX_SANDBOX_MAX_COMMAND_TIMEOUT", 1800, minimum=1, maximum=4 * 3600
)
# The wall-time limit of one call of an agent's file tool (read, list, search,
# write, edit): past it the call answers an error (agents/tools.py).
CODEX_SANDBOX_FILE_TOOL_TIMEOUT = env_int(
    "CODEX_SANDBOX_FILE_TOOL_TIMEOUT", 30, minimum=1, maximum=600
)
CODEX_SANDBOX_CPU_SECONDS = env_int("CODEX_SANDBOX_CPU_SECONDS", 300, minimum=1)
CODEX_SANDBOX_MEMORY_MB = env_int("CODEX_SANDBOX_MEMORY_MB", 2048, minimum=64)
CODEX_SANDBOX_MAX_PROCESSES = env_int("CODEX_SANDBOX_MAX_PROCESSES", 256, minimum=8)
CODEX_SANDBOX_MAX_FILE_MB = env_int("CODEX_SANDBOX_MAX_FILE_MB", 512, minimum=1)
# A repository's setup command (once per worktree) may take longer.
CODEX_SANDBOX_SETUP_TIMEOUT = env_int(
    "CODEX_SANDBOX_SETUP_TIMEOUT", 900, minimum=10, maximum=7200
)
# What a setup made, kept per repository and key files so that the next
# worktree gets a copy instead of installing again (docs/jail.md); empty: off.
CODEX_SETUP_CACHE_ROOT = env_str("CODEX_SETUP_CACHE_ROOT", str(VAR_DIR / "toolchains"))
CODEX_SETUP_CACHE_KEEP = env_int("CODEX_SETUP_CACHE_KEEP", 3, minimum=1)
# Networks (CIDR, comma-separated) the setup command's proxy may reach besides
# public addresses: an internal registry mirror, or a machine whose registries
# resolve to a private or reserved address. Empty: public addresses only
# (docs/jail.md, the setup command's network hosts).
CODEX_SETUP_EGRESS_NETWORKS = env_list("CODEX_SETUP_EGRESS_NETWORKS", [])
for _network in CODEX_SETUP_EGRESS_NETWORKS:
    try:
        ipaddress.ip_network(_network.strip(), strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"CODEX_SETUP_EGRESS_NETWORKS: {_network!r} is not a network "
            "(write it as 10.0.0.0/8 or 203.0.113.80/32)"
        ) from None
# The container backends' image when a repository names none.
CODEX_SANDBOX_IMAGE = env_str("CODEX_SANDBOX_IMAGE", "python:3.11-slim-bookworm")
# Host folders bound read-only into the jail at their own path (toolchains,
# package caches an operator provides); never Codex's own folders.
CODEX_SANDBOX_READONLY_PATHS = env_list("CODEX_SANDBOX_READONLY_PATHS", [])
# Variables an operator adds to the agents' command environment (KEY=VALUE,
# comma-separated), e.g. PYTEST_DISABLE_PLUGIN_AUTOLOAD=1; nothing else is
# inherited from the worker (no secrets reach the sandbox).
CODEX_SANDBOX_ENV = env_pairs("CODEX_SANDBOX_ENV")
CODEX_TEST_COMMAND = env_str(
    "CODEX_TEST_COMMAND",
    "python -B -m pytest -q -p no:cacheprovider --junitxml={junit_xml}",
)
CODEX_TEST_COMMANDS: dict[str, str] = {}
# Lint and type check: run by QA when set (a repository's own command wins);
# whether their failure fails verification.
CODEX_LINT_COMMAND = env_str("CODEX_LINT_COMMAND", "")
CODEX_TYPE_CHECK_COMMAND = env_str("CODEX_TYPE_CHECK_COMMAND", "")
CODEX_QA_CHECKS_BLOCK = env_bool("CODEX_QA_CHECKS_BLOCK", True)
