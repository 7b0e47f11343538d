"""A repository's setup command: once per worktree, in the jail, first.

`Repository.setup_command` (say `python3 -m venv .venv && .venv/bin/pip
install -e .[test]`, or `npm ci`) prepares the repository's own environment
in its worktree, so that the agent's commands and QA's checks run with the
repository's tools rather than Codex's. It runs in the jail like any other
command, with the longer CODEX_SANDBOX_SETUP_TIMEOUT. A marker in the
worktree's git folder (out of the jail's reach) records the command that
succeeded; a changed command runs again. What it creates (a `.venv`,
`node_modules`) is added to the repository's exclude file so that it never
reaches a commit. With a `cache` (agents.ecosystems.cache), a fresh worktree
gets a copy of what the same setup made before instead of running it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings

from integrations.git import run_git
from integrations.jail import Jail
from integrations.jail.egress import EgressProxy, proxy_environment, wrapped_command


class SetupStore(Protocol):
    """Where what a setup made is kept for the next fresh worktree
    (agents.ecosystems.cache.SetupCache)."""

    key: str

    def restore(self, worktree: Path) -> list[str] | None: ...

    def untracked(self, worktree: Path) -> set[str]: ...

    def store(self, worktree: Path, before: set[str]) -> None: ...


MARKER = "codex-setup"
SHOWN_OUTPUT = 4000


def ensure_setup(
    jail: Jail,
    command: str,
    hosts: list[str] | None = None,
    *,
    cache: SetupStore | None = None,
    **proxy: Any,
) -> str:
    """Run `command` in `jail` unless it already succeeded in this worktree.

    `hosts`: the only hosts it may reach (HTTPS through egress.EgressProxy);
    none: no network at all. `cache`: where a fresh worktree finds what the
    same setup made before, and where a run in one keeps it (a changed key,
    such as a changed lock file, runs the setup again). `proxy`: the proxy's
    test seams.

    Returns "" when the worktree is ready, else why it is not (for a person:
    the command failed, or timed out, with the end of its output).
    """
    command = (command or "").strip()
    if not command:
        return ""
    worktree = jail.worktree
    marker = _git_path(worktree, "--absolute-git-dir") / MARKER
    key = f"{command}\n{' '.join(sorted(hosts or []))}"
    if cache is not None:
        key += f"\n{cache.key}"
    digest = hashlib.sha256(key.encode()).hexdigest()
    if marker.is_file() and marker.read_text().strip() == digest:
        return ""
    # What was there before, when a fresh worktree's setup may fill the cache.
    snapshot: set[str] | None = None
    if cache is not None and not marker.exists():
        restored = cache.restore(worktree)
        if restored is not None:
            _exclude(worktree, restored)
            marker.write_text(digest + "\n")
            return ""
        snapshot = cache.untracked(worktree)
    before = _untracked(worktree)
    timeout = settings.CODEX_SANDBOX_SETUP_TIMEOUT
    longer = dataclasses.replace(
        jail,
        limits=dataclasses.replace(
            jail.limits,
            wall_seconds=float(timeout),
            cpu_seconds=int(timeout),
            output_chars=SHOWN_OUTPUT,
        ),
    )
    if hosts:
        with EgressProxy(hosts, **{**operator_networks(), **proxy}) as egress:
            result = longer.run(
                wrapped_command(command),
                egress=egress.folder,
                env=proxy_environment(),
            )
            refused = list(egress.refused)
    else:
        result, refused = longer.run(["bash", "-c", command]), []
    if not result.ok:
        if refused:
            result.output += "\n[refused by the allow-list: " + "; ".join(refused) + "]"
        ended = result.note or f"exit code {result.exit_code}"
        return (
            f"the repository's setup command failed ({ended}): {command!r}. "
            f"Its output:\n{result.output[-SHOWN_OUTPUT:]}"
        )
    _exclude(worktree, sorted(_untracked(worktree) - before))
    if cache is not None and snapshot is not None:
        cache.store(worktree, snapshot)
    marker.write_text(digest + "\n")
    return ""


def operator_networks() -> dict[str, Callable[[str], bool]]:
    """The proxy's address check widened to CODEX_SETUP_EGRESS_NETWORKS (an
    operator's registry mirror on a private network); {} keeps the proxy's
    own check alone."""
    networks = [
        ipaddress.ip_network(text.strip(), strict=False)
        for text in getattr(settings, "CODEX_SETUP_EGRESS_NETWORKS", None) or []
        if text.strip()
    ]
    if not networks:
        return {}
    default = EgressProxy.__init__.__kwdefaults__["address_allowed"]

    def allowed(address: str) -> bool:
        ip = ipaddress.ip_address(address)
        return any(ip in network for network in networks) or default(address)

    return {"address_allowed": allowed}


def _git_path(worktree: Path, flag: str) -> Path:
    return Path(run_git(["rev-parse", flag], worktree).strip())


def _untracked(worktree: Path) -> set[str]:
    """Untracked files and folders (a folder as one entry), not ignored."""
    listing = run_git(
        ["ls-files", "--others", "--exclude-standard", "--directory", "-z"],
        worktree,
    )
    return {entry for entry in listing.split("\0") if entry}


def _exclude(worktree: Path, entries: list[str]) -> None:
    """Keep `entries` out of commits: the shared exclude file of the mirror
    (every worktree of the repository runs the same setup)."""
    if not entries:
        return
    common = _git_path(worktree, "--git-common-dir")
    if not common.is_absolute():
        common = (worktree / common).resolve()
    exclude = common / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    known = set(exclude.read_text().splitlines()) if exclude.exists() else set()
    # Anchored and escaped, so a name cannot become a pattern of its own.
    lines = [
        "/" + "".join(f"\\{c}" if c in "*?[]!#\\" else c for c in entry)
        for entry in entries
        if "\n" not in entry and "\r" not in entry
    ]
    new = [line for line in lines if line not in known]
    if new:
        with exclude.open("a") as handle:
            handle.write("".join(f"{line}\n" for line in new))
