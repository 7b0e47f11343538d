"""The tests near a change: QA runs them first, as a check of their own,
then the whole suite (docs/jail.md#tests-near-the-change).

From the branch's diff against the base: the test files it changes, and the
test files named after a module it changes (test_<name>.py or
<name>_test.py; <name>.test.js, <name>.spec.ts or __tests__/<name>.js; a Go
package's folder; a Rust integration test, else the changed modules' names
as filters). The test command is narrowed to them when its runner is one
that takes files (pytest, unittest, node --test, or npm test running one of
jest, vitest, mocha, node --test), `go test` or `cargo test`; otherwise
there is no such check. Every path put on the command line is a plain path
(agents.ecosystems.tree.safe_path): nothing the branch names becomes an
option.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from pathlib import Path
from typing import Any

from agents.ecosystems import javascript
from agents.ecosystems.tree import Tree, all_files, safe_path
from codex.core.errors import ClassifiedFailure
from integrations.git import run_git

MAX_CHANGED = 2000
MAX_TESTS = 50
PY_TEST = re.compile(r"(^|/)(test_[^/]+|[^/]+_test)\.py$")
JS_SOURCE = re.compile(r"\.[cm]?[jt]sx?$")
JS_TEST = re.compile(r"(\.(test|spec)\.[cm]?[jt]sx?$)|(^|/)__tests__/")
JS_FILE_RUNNERS = ("node-test", "jest", "vitest", "mocha")


def changed_files(worktree: Path, base: str) -> list[str]:
    """Files the branch adds or changes against where it left `base`."""
    try:
        listing = run_git(
            ["diff", "--name-only", "-z", "--diff-filter=ACMR", f"{base}...HEAD"],
            worktree,
        )
    except ClassifiedFailure:
        return []
    return [path for path in listing.split("\0") if path][:MAX_CHANGED]


def _stem(path: str) -> str:
    return posixpath.basename(path).split(".")[0]


def python_tests(changed: list[str], tracked: list[str]) -> list[str]:
    """Changed test files, then tests named after changed modules."""
    found = [p for p in changed if PY_TEST.search(p) and p in tracked]
    stems = {_stem(p) for p in changed if p.endswith(".py") and not PY_TEST.search(p)}
    stems.discard("__init__")
    names = {f"test_{s}.py" for s in stems} | {f"{s}_test.py" for s in stems}
    found += [p for p in tracked if posixpath.basename(p) in names]
    return [p for p in dict.fromkeys(found) if safe_path(p)]


def js_tests(changed: list[str], tracked: list[str]) -> list[str]:
    """Changed test files, then tests named after changed sources."""
    found = [p for p in changed if JS_TEST.search(p) and JS_SOURCE.search(p)]
    stems = {_stem(p) for p in changed if JS_SOURCE.search(p) and not JS_TEST.search(p)}
    found += [
        p
        for p in tracked
        if JS_SOURCE.search(p) and JS_TEST.search(p) and _stem(p) in stems
    ]
    return [p for p in dict.fromkeys(found) if p in tracked and safe_path(p)]


def _go_packages(changed: list[str]) -> list[str]:
    folders = {posixpath.dirname(p) for p in changed if p.endswith(".go")}
    return sorted("./" + f if f else "." for f in folders)


def _rust_targets(changed: list[str]) -> list[str]:
    """`--test name` for changed integration tests, else the changed
    modules' names as filters."""
    tests = [_stem(p) for p in changed if re.fullmatch(r"tests/[^/]+\.rs", p)]
    if tests:
        return [arg for name in sorted(set(tests)) for arg in ("--test", name)]
    modules = set()
    for path in changed:
        if path.endswith(".rs") and path.startswith("src/"):
            name = _stem(path)
            if name == "mod":
                name = posixpath.basename(posixpath.dirname(path))
            if name not in ("lib", "main", "src"):
                modules.add(name)
    return ["--", *sorted(modules)] if modules else []


def _program(argv: list[str]) -> int:
    """Index of the program after `env` and its assignments."""
    index = 0
    if argv and argv[0] == "env":
        index = 1
    while index < len(argv) and re.match(r"^[A-Z_][A-Z0-9_]*=", argv[index]):
        index += 1
    return index


def _narrowed(argv: list[str], worktree: Path, changed: list[str]) -> list[str]:
    """`argv` narrowed to the tests near `changed`, [] when it cannot be."""
    start = _program(argv)
    program = posixpath.basename(argv[start]) if start < len(argv) else ""
    rest = argv[start + 1 :]
    if program == "go" and rest[:1] == ["test"]:
        packages = _go_packages(changed)
        kept = [a for a in argv if a != "./..."]
        return kept + packages if packages else []
    if program == "cargo" and rest[:1] == ["test"]:
        targets = _rust_targets(changed)
        return argv + targets if targets and "--" not in argv else []
    tracked = all_files(worktree)
    module = _python_module(program, rest)
    if module == "pytest" or program in ("pytest", "py.test"):
        files = python_tests(changed, tracked)[:MAX_TESTS]
        return argv + files if files else []
    if module == "unittest":
        files = python_tests(changed, tracked)[:MAX_TESTS]
        # Named files replace discovery: `-m unittest tests/test_x.py`.
        cut = start + 1 + rest.index("-m") + 2
        return argv[:cut] + files if files else []
    js = _js_runner(program, rest, worktree)
    if js:
        files = js_tests(changed, tracked)[:MAX_TESTS]
        if not files:
            return []
        if program == "node":
            return argv + files
        return argv + files if "--" in argv else argv + ["--", *files]
    return []


def _python_module(program: str, rest: list[str]) -> str:
    """The module of `python -m module`, "" for anything else."""
    if not program.startswith("python"):
        return ""
    for index, arg in enumerate(rest):
        if arg == "-m":
            return rest[index + 1] if index + 1 < len(rest) else ""
        if not arg.startswith("-"):
            return ""
    return ""


def _js_runner(program: str, rest: list[str], worktree: Path) -> str:
    """node-test, jest, vitest or mocha when the command runs one that takes
    test files; "" otherwise."""
    if program == "node" and "--test" in rest:
        return "node-test"
    if program in ("npm", "pnpm", "yarn") and rest[:1] == ["test"]:
        package: dict[str, Any] = javascript.package_json(Tree.at(worktree))
        runner = javascript.runner_of(javascript.test_script(package))
        return runner if runner in JS_FILE_RUNNERS else ""
    return ""


def nearby_command(worktree: Path, base: str, command: str) -> str:
    """The test command narrowed to the tests near the branch's change, ""
    when there are none or the command's runner cannot be narrowed."""
    changed = [p for p in changed_files(worktree, base) if safe_path(p)]
    if not changed:
        return ""
    try:
        argv = shlex.split(command)
    except ValueError:
        return ""
    narrowed = _narrowed(argv, worktree, changed) if argv else []
    if not narrowed:
        return ""
    if narrowed[: len(argv)] == argv:
        # Only arguments added: the command as the repository wrote it, then them.
        return f"{command.strip()} {shlex.join(narrowed[len(argv) :])}"
    return shlex.join(narrowed)


def failures_first(
    failures: list[dict[str, Any]], nearby: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The suite's failures with those of the tests near the change first,
    and theirs that the suite's run did not name (it timed out) added."""
    names = {str(f.get("name")) for f in nearby}
    known = {str(f.get("name")) for f in failures}
    first = [f for f in failures if str(f.get("name")) in names]
    extra = [f for f in nearby if str(f.get("name")) not in known]
    rest = [f for f in failures if str(f.get("name")) not in names]
    return first + extra + rest
