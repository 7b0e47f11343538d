"""The environment sets itself up (docs/jail.md#what-codex-detects).

When a repository configures nothing, Codex detects its ecosystems from the
tracked files at the worktree's commit (Python, JavaScript and TypeScript,
Go, Rust) and derives the setup and test commands; the repository's own
settings always win. The setup reaches only the ecosystem's registry
through the allow-list proxy, its result is cached per repository and key
files (agents.ecosystems.cache), and QA runs the tests near the change
before the whole suite (agents.ecosystems.nearby).

`prepare_environment(repository, jail)` is what a step calls before its
agent; `environment_for` and `detect` only look.
"""

from agents.ecosystems.environment import (
    Environment,
    detect,
    environment_for,
    prepare_environment,
)
from agents.ecosystems.model import Detection, Ecosystem

__all__ = [
    "Detection",
    "Ecosystem",
    "Environment",
    "detect",
    "environment_for",
    "prepare_environment",
]
