"""The ways to jail a command: bubblewrap, a container CLI, or none.

Each backend turns a `JailSpec` and a command into the argv that starts the
command jailed, and says whether it can run on this machine. What every
jailing backend gives the command (see docs/jail.md):

- the task's worktree at /workspace, its only writable place (its `.git`
  hidden behind a read-only empty file), a private /tmp and home;
- the system's programs and libraries read-only, and nothing else of the
  host: no Codex checkout, no `var/`, no mirrors, no other worktree, no
  /etc/shadow, no /sys;
- its own PID namespace (its /proc shows its own processes only), its own
  network namespace (loopback only), an unprivileged user, an environment
  built from nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from integrations.jail.health import missing_bubblewrap_fix, no_namespaces_fix

WORKSPACE = "/workspace"
OUTPUT_DIR = "/codex/out"
EGRESS_DIR = "/codex/egress"
JAIL_USER = "codex"
JAIL_UID = 1000
JAIL_HOME = f"/home/{JAIL_USER}"

# The system folders a command needs, read-only; a merged /usr has symlinks.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What of /etc programs read; never the whole of it (shadow, keys, configs).
ETC_ENTRIES = (
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "nsswitch.conf",
    "hosts",
    "mime.types",
    "protocols",
    "services",
    "os-release",
    "debian_version",
    "bash.bashrc",
    "profile",
    "inputrc",
    "python3",
)

# The jail's tmpfs folders (Limits.tmpfs_bytes names them) and where each is
# mounted; home is /home, so that JAIL_HOME can be made in it.
TMPFS_MOUNTS = (("/tmp", "/tmp"), ("home", "/home"), ("/dev/shm", "/dev/shm"))


class JailUnavailable(Exception):
    """No backend can jail commands here: why, and the one step that fixes it."""

    def __init__(self, reason: str, fix: str) -> None:
        self.reason = reason
        self.fix = fix
        super().__init__(f"{reason}; to fix: {fix}")


@dataclass(frozen=True)
class JailSpec:
    """Where a command runs and what it sees.

    `readonly`: host folders an operator provides (toolchains, caches), bound
    read-only at the same path. `outputs`: a host folder bound writable at
    OUTPUT_DIR for files Codex reads back (JUnit XML). `env`: the command's
    whole environment. `image`: the container image (container backends).
    `egress`: the folder of the setup step's proxy socket, bound at
    egress.SOCKET_DIR (the only way out, and only for setup).
    """

    worktree: Path
    env: dict[str, str] = field(default_factory=dict)
    readonly: tuple[Path, ...] = ()
    outputs: Path | None = None
    image: str = ""
    # The setup step's proxy socket folder (egress.EgressProxy), else None.
    egress: Path | None = None


@dataclass(frozen=True)
class Launch:
    """How a backend starts one command: argv, its environment, the host
    folder it starts in, and a handle to stop it by (containers)."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    handle: str = ""


class Backend:
    """One way to run a command jailed."""

    name = "none"
    jailed = False
    # Container CLIs run the command elsewhere: the supervisor's cgroup and
    # rlimits would bind only the client, and the kill must reach the engine.
    supervisor_limits = True
    # Whether the command sees the host's /etc/ssl (its CA bundle): a
    # container sees its image's.
    sees_host_certificates = True

    def problem(self) -> JailUnavailable | None:
        """Why this backend cannot run here, or None when it can."""
        return None

    def command(self, spec: JailSpec, argv: Sequence[str], cwd: str, limits) -> Launch:
        """What to start, with which environment, in which host folder."""
        host_cwd = spec.worktree / cwd.removeprefix(WORKSPACE).lstrip("/")
        env = {
            key: value.replace(WORKSPACE, str(spec.worktree))
            for key, value in spec.env.items()
        }
        return Launch(list(argv), env, str(host_cwd))

    def stop(self, handle: str) -> None:
        """Stop what `command` started under `handle` (containers)."""

    def host_path(self, spec: JailSpec, inside: str) -> Path | None:
        """The host path behind a path inside the jail, where it is mounted
        (None where it is not, or only the image knows)."""
        if inside == WORKSPACE or inside.startswith(WORKSPACE + "/"):
            return spec.worktree / inside[len(WORKSPACE) :].lstrip("/")
        return self.outside_worktree(spec, Path(inside))

    def outside_worktree(self, spec: JailSpec, path: Path) -> Path | None:
        """`path` outside the worktree as the host sees it: unjailed, itself."""
        return path


class HostBackend(Backend):
    """No jail: the command runs on the worker's host, as the worker's user.
    Only when an operator chose it (CODEX_SANDBOX=none); always warned about."""


class BubblewrapBackend(Backend):
    """Linux namespaces through bubblewrap (unprivileged user namespaces)."""

    name = "bubblewrap"
    jailed = True

    def __init__(self, executable: str | None = None) -> None:
        self.executable = executable or shutil.which("bwrap") or ""
        self._problem: JailUnavailable | None | bool = False
        self._sized: bool | None = None

    def problem(self) -> JailUnavailable | None:
        if self._problem is not False:
            return self._problem  # type: ignore[return-value]
        if not self.executable:
            self._problem = JailUnavailable(
                "bubblewrap (bwrap) is not installed", missing_bubblewrap_fix()
            )
            return self._problem
        probe = [self.executable, *self._namespaces(), *self._system(), "true"]
        try:
            result = subprocess.run(
                probe,
                capture_output=True,
                text=True,
                timeout=20,
                env={"PATH": "/usr/bin:/bin"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            self._problem = JailUnavailable(
                f"bubblewrap could not start: {exc}",
                "check that bwrap runs: bwrap --unshare-all --ro-bind / / true",
            )
            return self._problem
        if result.returncode != 0:
            self._problem = JailUnavailable(
                "bubblewrap cannot create namespaces here: "
                + (result.stderr.strip() or f"exit code {result.returncode}"),
                no_namespaces_fix(),
            )
            return self._problem
        self._problem = None
        return None

    def _namespaces(self) -> list[str]:
        return [
            "--unshare-all",
            # unshare-all only tries the user namespace; it must be there.
            "--unshare-user",
            "--die-with-parent",
            "--new-session",
            "--uid",
            str(JAIL_UID),
            "--gid",
            str(JAIL_UID),
            "--hostname",
            "codex-jail",
            "--disable-userns",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
        ]

    def _system(self) -> list[str]:
        args: list[str] = []
        for folder in SYSTEM_DIRS:
            path = Path(folder)
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), folder]
            elif path.is_dir():
                args += ["--ro-bind", folder, folder]
        for entry in ETC_ENTRIES:
            args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
        identity = _identity_files()
        args += [
            "--ro-bind",
            str(identity / "passwd"),
            "/etc/passwd",
            "--ro-bind",
            str(identity / "group"),
            "/etc/group",
        ]
        return args

    def _tmpfs(self, limits) -> list[str]:
        """/tmp, home and /dev/shm, each a tmpfs of a size its own (their sizes
        add up to the memory limit, which counts their pages too); /dev, a
        tmpfs bubblewrap makes, read-only (its device nodes still work)."""
        args: list[str] = []
        for folder, mounted in TMPFS_MOUNTS:
            if self.sized_tmpfs():
                args += ["--size", str(limits.tmpfs_bytes(folder))]
            args += ["--tmpfs", mounted]
        return [*args, "--remount-ro", "/dev", "--dir", JAIL_HOME]

    def sized_tmpfs(self) -> bool:
        """Whether this bubblewrap sizes a tmpfs (`--size`, since 0.5.0);
        where not, only the memory cgroup bounds them."""
        if self._sized is None:
            try:
                shown = subprocess.run(
                    [self.executable, "--help"],
                    capture_output=True,
                    text=True,
                    timeout=20,
                    check=False,
                )
                self._sized = "--size" in shown.stdout + shown.stderr
            except (OSError, subprocess.TimeoutExpired):
                self._sized = False
        return self._sized

    def command(self, spec: JailSpec, argv: Sequence[str], cwd: str, limits) -> Launch:
        args = [self.executable, *self._namespaces(), *self._system()]
        args += self._tmpfs(limits)
        for folder in spec.readonly:
            args += ["--ro-bind", str(folder), str(folder)]
        args += ["--bind", str(spec.worktree), WORKSPACE]
        git, hidden = spec.worktree / ".git", f"{WORKSPACE}/.git"
        if git.is_dir() and not git.is_symlink():
            args += ["--tmpfs", hidden, "--remount-ro", hidden]
        elif git.exists() or git.is_symlink():
            args += ["--ro-bind", str(_identity_files() / "empty"), hidden]
        if spec.outputs is not None:
            args += ["--bind", str(spec.outputs), OUTPUT_DIR]
        if spec.egress is not None:
            args += ["--ro-bind", str(spec.egress), EGRESS_DIR]
        # The jail's own root (where the mounts above hang) is read-only too.
        args += ["--remount-ro", "/", "--chdir", cwd, "--", *argv]
        # The environment bubblewrap passes on is the command's, nothing else.
        return Launch(args, dict(spec.env), str(spec.worktree))

    def outside_worktree(self, spec: JailSpec, path: Path) -> Path | None:
        mounted = [Path(folder) for folder in SYSTEM_DIRS] + list(spec.readonly)
        if any(path == root or path.is_relative_to(root) for root in mounted):
            return path
        return None


class ContainerBackend(Backend):
    """A container per command through the docker or podman CLI: no network,
    a read-only root, the worktree bind-mounted, memory and pids limits.
    The image is the repository's (Repository.sandbox_image) or the default."""

    jailed = True
    supervisor_limits = False
    sees_host_certificates = False

    def __init__(self, cli: str) -> None:
        self.name = cli
        self.executable = shutil.which(cli) or ""

    def problem(self) -> JailUnavailable | None:
        if not self.executable:
            return JailUnavailable(
                f"the {self.name} command is not installed",
                f"install {self.name}, or set CODEX_SANDBOX=bubblewrap",
            )
        return None

    def command(self, spec: JailSpec, argv: Sequence[str], cwd: str, limits) -> Launch:
        if not spec.image:
            raise JailUnavailable(
                "no container image is configured for this repository",
                "set CODEX_SANDBOX_IMAGE or the repository's sandbox image",
            )
        handle = f"codex-jail-{uuid.uuid4().hex[:12]}"
        args = [
            self.executable,
            "run",
            "--rm",
            "--name",
            handle,
            "--network",
            "none",
            "--read-only",
            "--init",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--user",
            f"{JAIL_UID}:{JAIL_UID}",
            "--pids-limit",
            str(limits.max_processes),
            # Memory plus swap = memory: no swap. The container's tmpfs pages
            # are charged to its memory cgroup, as in bubblewrap.
            "--memory",
            f"{limits.memory_mb}m",
            "--memory-swap",
            f"{limits.memory_mb}m",
            "--ulimit",
            f"cpu={limits.cpu_seconds}",
            "--ulimit",
            f"fsize={limits.max_file_mb * 1024 * 1024}",
            # The engine's own tmpfs options (noexec, nosuid, nodev) and a size.
            "--tmpfs",
            f"/tmp:size={limits.tmpfs_bytes('/tmp')}",
            "--tmpfs",
            f"{JAIL_HOME}:size={limits.tmpfs_bytes('home')}",
            "--shm-size",
            str(limits.tmpfs_bytes("/dev/shm")),
            "--volume",
            f"{spec.worktree}:{WORKSPACE}",
        ]
        git = spec.worktree / ".git"
        if git.exists() or git.is_symlink():
            args += ["--volume", f"{os.devnull}:{WORKSPACE}/.git:ro"]
        for folder in spec.readonly:
            args += ["--volume", f"{folder}:{folder}:ro"]
        if spec.outputs is not None:
            args += ["--volume", f"{spec.outputs}:{OUTPUT_DIR}"]
        if spec.egress is not None:
            args += ["--volume", f"{spec.egress}:{EGRESS_DIR}:ro"]
        for key, value in sorted(spec.env.items()):
            args += ["--env", f"{key}={value}"]
        args += ["--workdir", cwd, "--label", f"codex.jail={handle}"]
        args += ["--", spec.image, *argv]
        client_env = {
            key: os.environ[key]
            for key in ("PATH", "DOCKER_HOST", "CONTAINER_HOST", "XDG_RUNTIME_DIR")
            if key in os.environ
        }
        return Launch(args, client_env, str(spec.worktree), handle)

    def stop(self, handle: str) -> None:
        subprocess.run(
            [self.executable, "kill", handle],
            capture_output=True,
            timeout=30,
            check=False,
        )

    def outside_worktree(self, spec: JailSpec, path: Path) -> Path | None:
        return None  # what the image holds cannot be known from here


_IDENTITY: list[Path] = []


def _identity_files() -> Path:
    """/etc/passwd and /etc/group naming only the jail's user, made once."""
    if _IDENTITY and (_IDENTITY[0] / "empty").exists():
        return _IDENTITY[0]
    folder = Path(tempfile.mkdtemp(prefix="codex-jail-etc-"))
    folder.chmod(0o755)
    (folder / "passwd").write_text(
        f"{JAIL_USER}:x:{JAIL_UID}:{JAIL_UID}:Codex agent:{JAIL_HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    (folder / "group").write_text(f"{JAIL_USER}:x:{JAIL_UID}:\nnogroup:x:65534:\n")
    # What a worktree's `.git` file looks like from inside: empty, read-only.
    (folder / "empty").write_text("")
    for name in ("passwd", "group", "empty"):
        (folder / name).chmod(0o644)
    _IDENTITY[:] = [folder]
    return folder


BACKENDS = ("auto", "bubblewrap", "docker", "podman", "none")
_CACHE: dict[str, Backend] = {}


def backend_named(name: str) -> Backend:
    """The backend CODEX_SANDBOX names, or JailUnavailable with the fix.

    `auto` is bubblewrap where it works, and never falls back to no jail.
    """
    name = (name or "auto").strip().lower()
    if name not in BACKENDS:
        raise JailUnavailable(
            f"CODEX_SANDBOX={name!r} is not a backend",
            f"set CODEX_SANDBOX to one of {', '.join(BACKENDS)}",
        )
    if name not in _CACHE:
        if name == "none":
            _CACHE[name] = HostBackend()
        elif name in ("docker", "podman"):
            _CACHE[name] = ContainerBackend(name)
        else:
            _CACHE[name] = BubblewrapBackend()
    backend = _CACHE[name]
    problem = backend.problem()
    if problem is not None:
        if name == "auto":
            raise JailUnavailable(
                f"no command jail is available ({problem.reason})", problem.fix
            )
        raise problem
    return backend


def forget_backends() -> None:
    """Drop what was found about the backends (tests; a changed machine)."""
    _CACHE.clear()
