"""Go modules (go.mod) and Rust crates (Cargo.toml).

Both toolchains keep downloaded dependencies under the user's home, which
the jail empties after every command; so the setup downloads them into
`.codex-deps/` in the worktree and every command of the worktree is told so
(GOMODCACHE, CARGO_HOME). Nothing is downloaded when there is nothing to
download (no go.sum; no dependency tables) or when Go's vendor folder is
committed.
"""

from __future__ import annotations

import tomllib

from agents.ecosystems.model import DEPS_DIR, Ecosystem, Which
from agents.ecosystems.tree import Tree
from integrations.jail import WORKSPACE

GO_HOSTS = ("proxy.golang.org", "sum.golang.org")
CARGO_HOSTS = ("crates.io", "static.crates.io", "index.crates.io")
GO_ENV = {
    "GOMODCACHE": f"{WORKSPACE}/{DEPS_DIR}/go/mod",
    # Go makes its module cache read-only; a worktree must stay removable.
    "GOFLAGS": "-modcacherw",
    # Never fetch another Go toolchain: the one installed runs the tests.
    "GOTOOLCHAIN": "local",
}
CARGO_ENV = {"CARGO_HOME": f"{WORKSPACE}/{DEPS_DIR}/cargo"}


def _missing(tool: str) -> str:
    return (
        f"{tool} is not installed where commands run: nothing is installed and "
        "the tests cannot run (add the toolchain to CODEX_SANDBOX_READONLY_PATHS "
        "and CODEX_SANDBOX_PATH)"
    )


def detect_go(tree: Tree, which: Which) -> Ecosystem | None:
    """The Go module at the top of `tree`, or None."""
    if not tree.has("go.mod"):
        return None
    notes = [] if which("go") else [_missing("go")]
    needs_download = tree.has("go.sum") and not tree.has("vendor/modules.txt")
    setup = ""
    if needs_download and not notes:
        setup = "GOPROXY=https://proxy.golang.org go mod download"
    return Ecosystem(
        name="go",
        manifests=("go.mod",),
        key_files=tuple(f for f in ("go.sum", "go.mod") if tree.has(f)),
        setup=setup,
        test="go test ./...",
        runner="go",
        hosts=GO_HOSTS,
        env=dict(GO_ENV) if setup else {},
        notes=tuple(notes),
    )


def _has_dependencies(manifest: dict) -> bool:
    tables = [manifest, *(manifest.get("target") or {}).values()]
    return any(
        isinstance(table, dict) and table.get(key)
        for table in tables
        for key in ("dependencies", "dev-dependencies", "build-dependencies")
    )


def detect_rust(tree: Tree, which: Which) -> Ecosystem | None:
    """The Rust crate or workspace at the top of `tree`, or None."""
    if not tree.has("Cargo.toml"):
        return None
    try:
        manifest = tomllib.loads(tree.read("Cargo.toml") or "")
    except tomllib.TOMLDecodeError:
        manifest = {}
    workspace = isinstance(manifest.get("workspace"), dict)
    notes = [] if which("cargo") else [_missing("cargo")]
    setup = ""
    if (workspace or _has_dependencies(manifest)) and not notes:
        setup = "cargo fetch --locked" if tree.has("Cargo.lock") else "cargo fetch"
    return Ecosystem(
        name="rust",
        manifests=("Cargo.toml",),
        key_files=tuple(f for f in ("Cargo.lock", "Cargo.toml") if tree.has(f)),
        setup=setup,
        test="cargo test --workspace" if workspace else "cargo test",
        runner="cargo",
        hosts=CARGO_HOSTS,
        env=dict(CARGO_ENV) if setup else {},
        notes=tuple(notes),
    )
