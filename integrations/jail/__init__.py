"""The command jail: every command run on a repository's behalf runs here.

An agent's shell commands, QA's checks and the repository's setup command
all go through `Jail.run`. The backend (CODEX_SANDBOX: auto, bubblewrap,
docker, podman, none) decides how the command is isolated from the worker;
`integrations.jail.limits` what it may use; `integrations.jail.process` how it
is supervised. What the jail protects, and what it does not, is in
docs/jail.md and SECURITY.md.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.conf import settings

from integrations.jail.backends import (
    BACKENDS,
    JAIL_HOME,
    OUTPUT_DIR,
    WORKSPACE,
    Backend,
    JailSpec,
    JailUnavailable,
    backend_named,
    forget_backends,
)
from integrations.jail.limits import Limits
from integrations.jail.process import CommandResult, supervise
from integrations.jail.quota import (
    check_after_write,
    quota_mb_for,
    register_quota_lookup,
)

__all__ = [
    "BACKENDS",
    "OUTPUT_DIR",
    "SYSTEM_PATH",
    "WORKSPACE",
    "CommandResult",
    "Jail",
    "JailUnavailable",
    "Limits",
    "configured_backend",
    "forget_backends",
    "limits_from_settings",
    "register_quota_lookup",
    "unjailed_warning",
    "worktree_over_quota",
]

logger = logging.getLogger(__name__)

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The repository's own environments come first on PATH.
PROJECT_PATH = f"{WORKSPACE}/.venv/bin:{WORKSPACE}/node_modules/.bin"
# Debian's and Ubuntu's bundle of the CAs the machine trusts (update-ca-
# certificates adds an operator's own), and the variables that point the
# tools with bundles of their own at it.
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
CA_BUNDLE_VARIABLES = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "NODE_EXTRA_CA_CERTS",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "CARGO_HTTP_CAINFO",
)
# A worktree's disk quota when no repository sets one (Repository's default).
DEFAULT_WORKTREE_QUOTA_MB = 1024


def limits_from_settings(
    worktree: str | os.PathLike[str] | None = None, *, quota_mb: int | None = None
) -> Limits:
    """The limits of one command, from the CODEX_SANDBOX_* settings, with
    the disk quota `quota_mb` (a caller that knows the repository gives its
    quota), else the quota of `worktree`'s repository, looked up."""
    quota = DEFAULT_WORKTREE_QUOTA_MB
    if quota_mb:
        quota = int(quota_mb)
    elif worktree is not None:
        quota = quota_mb_for(Path(worktree), DEFAULT_WORKTREE_QUOTA_MB)
    return Limits(
        wall_seconds=float(settings.CODEX_SANDBOX_COMMAND_TIMEOUT),
        cpu_seconds=int(settings.CODEX_SANDBOX_CPU_SECONDS),
        memory_mb=int(settings.CODEX_SANDBOX_MEMORY_MB),
        max_processes=int(settings.CODEX_SANDBOX_MAX_PROCESSES),
        max_file_mb=int(settings.CODEX_SANDBOX_MAX_FILE_MB),
        output_chars=int(settings.CODEX_AGENT_TOOL_OUTPUT_CHARS),
        worktree_quota_mb=quota,
    )


def worktree_over_quota(worktree: str | os.PathLike[str], jail: Jail | None) -> str:
    """Checked after each write of the agent's file tools: "" while the
    worktree holds no more than its quota (the jail's, else its
    repository's), else what the agent is told, with what fills it."""
    root = Path(worktree).resolve()
    if jail is not None:
        quota = jail.limits.worktree_quota_mb
    else:
        quota = quota_mb_for(root, DEFAULT_WORKTREE_QUOTA_MB)
    return check_after_write(root, quota)


def configured_backend() -> Backend:
    """The backend CODEX_SANDBOX names; JailUnavailable when it cannot run."""
    backend = backend_named(settings.CODEX_SANDBOX)
    if not backend.jailed:
        logger.warning(
            "CODEX_SANDBOX=none: agents' commands run on the worker's host, "
            "unjailed, as the worker's user"
        )
    return backend


def unjailed_warning() -> str:
    """A warning for the dashboard and the console, "" when commands are
    jailed (or would be refused rather than run unjailed)."""
    name = (settings.CODEX_SANDBOX or "auto").strip().lower()
    if name == "none":
        return (
            "Commands of agents run UNJAILED on the worker (CODEX_SANDBOX=none): "
            "a prompt-injected issue can read the worker's secrets."
        )
    try:
        backend_named(name)
    except JailUnavailable as exc:
        return f"Agents cannot run commands: {exc.reason}. Fix: {exc.fix}."
    return ""


@dataclass
class Jail:
    """The jail of one worktree: where its commands run and under which limits.

    `readonly`: extra host folders bound read-only at their own path
    (toolchains an operator provides, CODEX_SANDBOX_READONLY_PATHS).
    """

    worktree: Path
    backend: Backend
    limits: Limits
    path: str = ""
    extra_env: Mapping[str, str] = field(default_factory=dict)
    readonly: Sequence[Path] = ()
    image: str = ""

    @classmethod
    def for_worktree(
        cls,
        worktree: str | os.PathLike[str],
        *,
        image: str = "",
        backend: Backend | None = None,
        limits: Limits | None = None,
        worktree_quota_mb: int | None = None,
    ) -> Jail:
        """The jail of `worktree` as the settings describe it, held to
        `worktree_quota_mb` (its repository's quota: the caller knows it),
        else to the quota looked up from the worktree's mirror."""
        readonly = [
            Path(folder)
            for folder in settings.CODEX_SANDBOX_READONLY_PATHS
            if folder and Path(folder).is_dir()
        ]
        root = Path(worktree).resolve(strict=True)
        return cls(
            worktree=root,
            backend=backend or configured_backend(),
            limits=limits or limits_from_settings(root, quota_mb=worktree_quota_mb),
            path=settings.CODEX_SANDBOX_PATH or "",
            extra_env=dict(settings.CODEX_SANDBOX_ENV or {}),
            readonly=tuple(readonly),
            image=image or settings.CODEX_SANDBOX_IMAGE,
        )

    @property
    def jailed(self) -> bool:
        return self.backend.jailed

    def environment(self) -> dict[str, str]:
        """The command's whole environment: built from nothing."""
        path = f"{PROJECT_PATH}:{self.path or SYSTEM_PATH}"
        env = self.certificate_env()
        env.update(
            (key, value)
            for key, value in self.extra_env.items()
            if key not in ("PATH", "HOME", "TMPDIR", "USER")
        )
        env.update(
            {
                "PATH": path,
                "HOME": JAIL_HOME,
                "TMPDIR": "/tmp",
                "USER": "codex",
                "LANG": env.get("LANG", "C.UTF-8"),
                "PYTHONDONTWRITEBYTECODE": "1",
                "CI": "true",
            }
        )
        return env

    def certificate_env(self) -> dict[str, str]:
        """The machine's CA bundle for the tools that trust only a bundle of
        their own (pip's certifi, Node, cargo): the one the machine trusts,
        with any CA its operator added (a TLS-inspecting proxy's, which every
        download through the setup proxy then meets). Only where the command
        sees the host's /etc/ssl; CODEX_SANDBOX_ENV overrides each."""
        if not self.backend.sees_host_certificates:
            return {}
        if not Path(SYSTEM_CA_BUNDLE).is_file():
            return {}
        return dict.fromkeys(CA_BUNDLE_VARIABLES, SYSTEM_CA_BUNDLE)

    def which(self, program: str) -> str | None:
        """Where `program` is on the command's PATH, as the jail sees it; None
        when it is not there. With a container image only the image knows, so
        the name is given back as it is."""
        if "/" in program:
            return program
        spec = self._spec(None)
        for folder in self.environment()["PATH"].split(":"):
            host = self.backend.host_path(spec, folder)
            if host is None:
                continue
            candidate = host / program
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(PurePosixPath(folder) / program)
        if not self.backend.supervisor_limits:
            return program
        return None

    def output_path(self, outputs: Path, name: str) -> str:
        """The path a command writes `name` in `outputs` to, as it sees it."""
        if self.backend.jailed:
            return str(PurePosixPath(OUTPUT_DIR) / name)
        return str(outputs / name)

    def _spec(
        self,
        outputs: Path | None,
        egress: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> JailSpec:
        return JailSpec(
            worktree=self.worktree,
            env={**self.environment(), **(env or {})},
            readonly=tuple(self.readonly),
            outputs=outputs,
            image=self.image,
            egress=egress,
        )

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str = ".",
        timeout: float | None = None,
        outputs: Path | None = None,
        egress: Path | None = None,
        env: Mapping[str, str] | None = None,
        on_output: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """Run `argv` in the jail, in `cwd` (relative to the worktree).

        `outputs`: a host folder the command sees writable at OUTPUT_DIR.
        `egress`, `env`: the setup step's proxy folder and its variables.
        `on_output`: given the output as it comes (process.supervise).
        The worktree and `outputs` are held to the worktree's disk quota.
        """
        limits = self.limits.with_wall(timeout)
        inside = str(PurePosixPath(WORKSPACE) / cwd) if cwd != "." else WORKSPACE
        spec = self._spec(outputs, egress, env)
        launch = self.backend.command(spec, argv, inside, limits)
        watch = {self.worktree: ""}
        if outputs is not None:
            watch[Path(outputs)] = OUTPUT_DIR if self.jailed else str(outputs)
        with tempfile.TemporaryDirectory(prefix="codex-home-") as home:
            if not self.backend.jailed:
                # Unjailed, the home is a folder of the host's, never the worktree.
                launch.env["HOME"] = home
            return supervise(
                launch.argv,
                env=launch.env,
                cwd=launch.cwd,
                limits=limits,
                cgroup=self.backend.supervisor_limits,
                watch=watch,
                on_kill=(lambda: self.backend.stop(launch.handle))
                if launch.handle
                else None,
                on_output=on_output,
            )
