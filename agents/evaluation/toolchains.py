"""The test runners a case's tests need, made once outside the jail and bound
read-only into it (docs/eval.md#toolchains, docs/jail.md: toolchains).

A toolchain is a folder of the suite, `toolchains/<name>/`, holding either a
`requirements.txt` (every package pinned with its hashes: a virtual
environment is made with pip's --require-hashes, wheels only) or a
`package.json` with its `package-lock.json` (npm ci, no install scripts). It
is built under the cache folder, named by the digest of those files and the
Python that runs Codex, and reused while they do not change. Inside the jail
its bin folder comes first on PATH (after the repository's own .venv and
node_modules); a node toolchain's packages are found through NODE_PATH.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agents.demo import toolchain_paths
from integrations.jail import SYSTEM_PATH

PIP_FILE = "requirements.txt"
NPM_FILES = ("package.json", "package-lock.json")
READY = ".codex-ready"  # written last: a half-made toolchain is made again
INSTALL_TIMEOUT_SECONDS = 900


class ToolchainError(RuntimeError):
    """A toolchain that cannot be made."""


@dataclass(frozen=True)
class Toolchain:
    """A made toolchain: what goes first on PATH, what is bound read-only,
    and the variables the jail passes on."""

    path: list[str] = field(default_factory=list)
    readonly: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def settings(self) -> dict[str, object]:
        """The sandbox settings of a case using it."""
        return {
            "CODEX_SANDBOX_PATH": ":".join([*self.path, SYSTEM_PATH]),
            "CODEX_SANDBOX_READONLY_PATHS": list(self.readonly),
            "CODEX_SANDBOX_ENV": dict(self.env),
        }


NO_TOOLCHAIN = Toolchain(env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})


def _digest(folder: Path, names: tuple[str, ...]) -> str:
    digest = hashlib.sha256(sys.version.encode())
    for name in names:
        digest.update(name.encode() + b"\0" + (folder / name).read_bytes())
    return digest.hexdigest()[:16]


def _run(argv: list[str], cwd: Path) -> None:
    try:
        subprocess.run(
            argv,
            cwd=cwd,
            check=True,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_SECONDS,
        )
    except subprocess.CalledProcessError as exc:
        raise ToolchainError(
            f"{' '.join(argv[:3])}... failed: {(exc.stderr or exc.stdout)[-2000:]}"
        ) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"{argv[0]} could not run: {exc}") from None


def _python(folder: Path, cache: Path) -> Toolchain:
    def build(venv: Path) -> None:
        _run([sys.executable, "-m", "venv", str(venv)], cwd=cache)
        _run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--require-hashes",
                "--only-binary",
                ":all:",
                "-r",
                str(folder / PIP_FILE),
            ],
            cwd=cache,
        )

    name = f"{folder.name}-{_digest(folder, (PIP_FILE,))}"
    venv = _made_in_place(cache / "toolchains" / name, build)
    return Toolchain(
        path=[str(venv / "bin")],
        readonly=toolchain_paths(venv),
        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )


def _made_in_place(target: Path, build) -> Path:
    """`target`, built by `build(target)` unless it is already there; a
    failed build leaves nothing behind. Built in place: a venv and npm's
    .bin links keep their absolute paths."""
    if (target / READY).is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    try:
        build(target)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    (target / READY).write_text("made\n")
    return target


def _node(folder: Path, cache: Path) -> Toolchain:
    def build(target: Path) -> None:
        for name in NPM_FILES:
            shutil.copy2(folder / name, target / name)
        _run(
            [
                "npm",
                "ci",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ],
            cwd=target,
        )

    name = f"{folder.name}-{_digest(folder, NPM_FILES)}"
    target = _made_in_place(cache / "toolchains" / name, build)
    modules = target / "node_modules"
    return Toolchain(
        path=[str(modules / ".bin")],
        readonly=[str(target)],
        env={"NODE_PATH": str(modules), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )


def prepare_toolchain(folder: Path | None, cache: Path) -> Toolchain:
    """The toolchain described in `folder` (made now if it is not yet), or
    none: the system's programs only."""
    if folder is None:
        return NO_TOOLCHAIN
    cache = cache.absolute()
    cache.mkdir(parents=True, exist_ok=True)
    if (folder / PIP_FILE).is_file():
        return _python(folder, cache)
    if all((folder / name).is_file() for name in NPM_FILES):
        if shutil.which("npm") is None:
            raise ToolchainError("npm is not installed: it makes node toolchains")
        return _node(folder, cache)
    raise ToolchainError(
        f"{folder}: a toolchain holds {PIP_FILE}, or {' and '.join(NPM_FILES)}"
    )
