"""The judge: a case's FAIL_TO_PASS and PASS_TO_PASS tests on the merged main
branch, in the jail, with the project's own test runner (docs/eval.md#judge).

As SWE-bench's harness does, the agent's edits to the test files are set
aside first: every file the hidden tests touch, and every file a listed test
lives in, is restored from the base commit; then the hidden tests
(`test_patch`) are applied. The repository's setup command runs as QA's did
(its network hosts included), then the test command, whose results are read
into a status map (agents.evaluation.reports).

Resolved: every FAIL_TO_PASS test passed, and every PASS_TO_PASS test passed
or was skipped. A test missing from the results counts against the lists; a
test in neither list (one already failing on the base, or the agent's own)
counts for nothing. A run that reports no test at all, times out, or exits
non-zero without any failing test is not a judgement: the case is not
resolved and the note says why.
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.demo import git
from agents.evaluation.reports import (
    FAILED,
    PASSED,
    SKIPPED,
    ReportError,
    read_junit,
    tap_status,
)
from agents.evaluation.sources import Prepared
from agents.setup import ensure_setup
from integrations.jail import Jail, JailUnavailable

JUNIT = "{junit_xml}"
OUTPUT_CHARS = 20_000_000  # TAP is read from the output: keep all of it
SHOWN_FAILURES = 5


@dataclass
class Verdict:
    """What the judge found."""

    resolved: bool
    fail_to_pass: dict[str, list[str]] = field(default_factory=dict)
    pass_to_pass: dict[str, list[str]] = field(default_factory=dict)
    note: str = ""
    status: dict[str, str] = field(default_factory=dict)
    output: str = ""

    def counts(self) -> dict[str, Any]:
        return {
            "fail_to_pass_passed": len(self.fail_to_pass.get("success", [])),
            "pass_to_pass_failed": len(self.pass_to_pass.get("failure", [])),
        }


def grade(
    status: dict[str, str], fail_to_pass: list[str], pass_to_pass: list[str]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each list split into success and failure: FAIL_TO_PASS must pass,
    PASS_TO_PASS must pass or be skipped; a missing test fails both."""
    f2p: dict[str, list[str]] = {"success": [], "failure": []}
    for test in fail_to_pass:
        f2p["success" if status.get(test) == PASSED else "failure"].append(test)
    p2p: dict[str, list[str]] = {"success": [], "failure": []}
    for test in pass_to_pass:
        kept = status.get(test) in (PASSED, SKIPPED)
        p2p["success" if kept else "failure"].append(test)
    return f2p, p2p


def _shown(tests: list[str]) -> str:
    more = len(tests) - SHOWN_FAILURES
    return ", ".join(tests[:SHOWN_FAILURES]) + (f" and {more} more" if more > 0 else "")


def verdict_of(
    status: dict[str, str],
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    *,
    exit_code: int | None,
    output: str = "",
) -> Verdict:
    """The verdict on a run's status map (module docstring)."""
    if exit_code is None:
        return Verdict(False, note="the tests timed out", output=output)
    if not status:
        return Verdict(False, note="the test command reported no test", output=output)
    if exit_code != 0 and FAILED not in status.values():
        return Verdict(
            False,
            note=f"the test command exited {exit_code} without a failing test: its "
            "results do not describe the run",
            status=status,
            output=output,
        )
    f2p, p2p = grade(status, fail_to_pass, pass_to_pass)
    resolved = not f2p["failure"] and not p2p["failure"]
    notes = []
    if f2p["failure"]:
        notes.append(f"FAIL_TO_PASS not passing: {_shown(f2p['failure'])}")
    if p2p["failure"]:
        notes.append(f"PASS_TO_PASS broken: {_shown(p2p['failure'])}")
    return Verdict(resolved, f2p, p2p, "; ".join(notes), status, output)


def test_files_to_restore(prepared: Prepared) -> list[str]:
    """The files the hidden tests touch, and the files the listed tests live
    in (pytest ids name them: path::test)."""
    files = set(_patched_files(prepared.test_patch))
    tests = prepared.case.tests
    for test in (*tests.fail_to_pass, *tests.pass_to_pass):
        head = test.split("::", 1)[0]
        if "::" in test and ("/" in head or head.endswith((".py", ".js", ".ts"))):
            files.add(head)
    return sorted(files)


def _patched_files(patch: str) -> list[str]:
    files = []
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            parts = line.split(" b/", 1)
            if len(parts) == 2:
                files.append(parts[1].strip())
        elif line.startswith(("+++ b/", "--- a/")) and not files:
            files.append(line[6:].strip())
    return files


def _restore(checkout: Path, base: str, files: list[str]) -> None:
    """Each of `files` as it is in the base commit (gone when it is not
    there)."""
    in_base = set(
        git("ls-tree", "-r", "--name-only", "-z", base, cwd=checkout).split("\0")
    )
    for path in files:
        if path in in_base:
            git("checkout", "--quiet", base, "--", path, cwd=checkout)
        else:
            target = checkout / path
            if target.is_file() or target.is_symlink():
                target.unlink()


def apply_diff(checkout: Path, test_patch: str) -> str:
    """Apply a diff (the hidden tests) to the checkout; "" or why it does not
    apply."""
    if not test_patch.strip():
        return ""
    patch = checkout.parent / "test.diff"
    patch.write_text(test_patch if test_patch.endswith("\n") else test_patch + "\n")
    try:
        git("apply", "--whitespace=nowarn", str(patch), cwd=checkout)
    except subprocess.CalledProcessError as exc:
        return f"the hidden tests do not apply to main: {exc.stderr.strip()[:300]}"
    return ""


def run_tests(checkout: Path, prepared: Prepared) -> tuple[dict[str, str], Verdict]:
    """Set up the checkout and run the case's test command in its jail: the
    status map (empty when there are no results) and the verdict on it."""
    case = prepared.case
    try:
        jail = Jail.for_worktree(checkout)
    except JailUnavailable as exc:
        return {}, Verdict(False, note=f"the jail is unavailable: {exc.reason}")
    not_ready = ensure_setup(jail, case.setup_command, list(case.setup_hosts))
    if not_ready:
        return {}, Verdict(False, note=not_ready[:500])
    seconds = case.tests.timeout
    jail = dataclasses.replace(
        jail,
        limits=dataclasses.replace(
            jail.limits,
            wall_seconds=float(seconds),
            cpu_seconds=seconds,
            output_chars=OUTPUT_CHARS,
        ),
    )
    argv = shlex.split(case.tests.command)
    outputs = Path(tempfile.mkdtemp(prefix="codex-eval-junit-"))
    try:
        outputs.chmod(0o777)  # the jail's user writes the report here
        inside = jail.output_path(outputs, "junit.xml")
        argv = [arg.replace(JUNIT, inside) for arg in argv]
        result = jail.run(argv, outputs=outputs, timeout=seconds)
        exit_code = None if result.timed_out else result.exit_code
        if case.tests.report == "tap":
            status = tap_status(result.output)
        else:
            try:
                status = read_junit(outputs / "junit.xml")
            except ReportError as exc:
                note = f"{exc} (exit code {exit_code})"
                return {}, Verdict(False, note=note, output=result.output[-2000:])
    finally:
        shutil.rmtree(outputs, ignore_errors=True)
    tests = case.tests
    verdict = verdict_of(
        status,
        list(tests.fail_to_pass),
        list(tests.pass_to_pass),
        exit_code=exit_code,
        output=result.output[-2000:],
    )
    return status, verdict


def judge(prepared: Prepared, ref: str = "main") -> Verdict:
    """Judge `ref` of the case's bare repository (module docstring)."""
    folder = Path(tempfile.mkdtemp(prefix="codex-eval-judge-"))
    try:
        checkout = folder / "checkout"
        git(
            "clone",
            "--quiet",
            "--branch",
            ref,
            str(prepared.bare),
            str(checkout),
            cwd=folder,
        )
        _restore(checkout, prepared.base_sha, test_files_to_restore(prepared))
        problem = apply_diff(checkout, prepared.test_patch)
        if problem:
            return Verdict(False, note=problem)
        _, verdict = run_tests(checkout, prepared)
        return verdict
    finally:
        shutil.rmtree(folder, ignore_errors=True)
