"""What detection finds: one `Ecosystem` per kind of project at the top of
the repository, and the `Detection` that combines them
(docs/jail.md#what-codex-detects).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Where a program is as commands see it, None when it is not there.
Which = Callable[[str], str | None]

JUNIT_PLACEHOLDER = "{junit_xml}"
# Folder in the worktree for what a toolchain keeps outside it by default
# (Go's module cache, Cargo's registry): the jail's home is gone after each
# command, the worktree is not.
DEPS_DIR = ".codex-deps"


@dataclass(frozen=True)
class Ecosystem:
    """One kind of project found at the top of the repository.

    `setup`: a bash command line that installs its dependencies in the
    worktree ("" when there is nothing to install or no tool to do it);
    `test`: its test command (one program, no shell; `{junit_xml}` where the
    runner can write JUnit XML); `hosts`: the package registry the setup
    reaches; `key_files`: the files whose content decides what the setup
    installs (lock files and manifests); `env`: variables every command of
    the worktree needs for what the setup made; `notes`: what a person should
    know (a tool that is missing, a lock file that is not used).
    """

    name: str
    manifests: tuple[str, ...]
    key_files: tuple[str, ...] = ()
    setup: str = ""
    test: str = ""
    runner: str = ""
    hosts: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "manifests": list(self.manifests),
            "key_files": list(self.key_files),
            "setup": self.setup,
            "test": self.test,
            "runner": self.runner,
            "hosts": list(self.hosts),
            "env": dict(self.env),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Detection:
    """Every ecosystem found at `commit`, combined: their setups one after
    the other, the first one's test command (the others' are in the notes),
    the union of their registries and variables."""

    commit: str
    ecosystems: tuple[Ecosystem, ...] = ()
    # Blob ids of the key files at `commit` (the setup cache's key).
    key_blobs: dict[str, str] = field(default_factory=dict)

    @property
    def setup_command(self) -> str:
        return " && ".join(e.setup for e in self.ecosystems if e.setup)

    @property
    def test_command(self) -> str:
        return next((e.test for e in self.ecosystems if e.test), "")

    @property
    def runner(self) -> str:
        return next((e.runner for e in self.ecosystems if e.test), "")

    @property
    def hosts(self) -> list[str]:
        return sorted({host for e in self.ecosystems if e.setup for host in e.hosts})

    @property
    def env(self) -> dict[str, str]:
        merged: dict[str, str] = {}
        for ecosystem in self.ecosystems:
            if ecosystem.setup:
                merged.update(ecosystem.env)
        return merged

    @property
    def notes(self) -> list[str]:
        notes = [note for e in self.ecosystems for note in e.notes]
        tested = [e for e in self.ecosystems if e.test]
        for other in tested[1:]:
            notes.append(
                f"{other.name} tests (`{other.test}`) are not run: one test "
                f"command per repository, {tested[0].name}'s comes first"
            )
        return notes

    def as_json(self) -> dict[str, Any]:
        """What the repository stores and the console shows."""
        return {
            "ecosystems": [e.as_json() for e in self.ecosystems],
            "setup_command": self.setup_command,
            "setup_hosts": self.hosts,
            "test_command": self.test_command,
            "runner": self.runner,
            "env": self.env,
            "notes": self.notes,
        }
