"""`python -m agents.evaluation.validate`: check cases without the pipeline
(docs/eval.md#validating-a-case).

For each case, as SWE-smith validates a bug, three runs in the jail with the
case's own runner: the base as the agents get it, the base with the hidden
tests, and the base with the reference patch and the hidden tests. The case
holds when every FAIL_TO_PASS test passes with the reference and failed (or
was missing) in both other runs, and every PASS_TO_PASS test passes with the
reference and passed on the base as the agents get it (a test of a module
the hidden tests make unimportable without the change is such a test). It
prints what the runs say the lists should be; `--write` puts them into the
case file (TOML and JSON). Tests failing with the reference (already broken
on the base) go in neither list, nor do hidden tests that pass without the
change.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agents.evaluation.reports import PASSED, SKIPPED
from agents.evaluation.sources import prepare
from agents.evaluation.toolchains import prepare_toolchain
from agents.isolation import use_own_state


@dataclass
class Validation:
    """What the two runs of one case say."""

    case_id: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    failing_on_both: list[str]
    problems: list[str]
    base_note: str = ""
    gold_note: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def _run_on(
    prepared, patch: str, *, with_tests: bool = True
) -> tuple[dict[str, str], str]:
    """The status map of the base with `patch` (and the hidden tests)."""
    from agents.demo import git
    from agents.evaluation.judge import apply_diff, run_tests

    folder = Path(tempfile.mkdtemp(prefix="codex-eval-validate-"))
    try:
        checkout = folder / "checkout"
        git("clone", "--quiet", str(prepared.bare), str(checkout), cwd=folder)
        for diff in (patch, prepared.test_patch if with_tests else ""):
            problem = apply_diff(checkout, diff)
            if problem:
                return {}, problem
        status, verdict = run_tests(checkout, prepared)
        return status, "" if status else verdict.note
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def lists(
    seen: dict[str, str], base: dict[str, str], gold: dict[str, str]
) -> tuple[list[str], list[str]]:
    """FAIL_TO_PASS and PASS_TO_PASS from the three runs' status maps: the
    base as the agents get it (`seen`), with the hidden tests (`base`), and
    with the reference and the hidden tests (`gold`).

    A test passing with the reference is FAIL_TO_PASS when the hidden tests
    report it failing without the reference (a changed or new test, or one
    the defect breaks), or when it is missing there and did not pass as the
    agents got the base (a new test in a module that cannot be imported
    without the change). It is PASS_TO_PASS when it passed (or was skipped)
    as the agents got the base, and is not FAIL_TO_PASS: missing with the
    hidden tests alone means its module cannot be imported without the
    change, which the change must keep working."""
    kept = (PASSED, SKIPPED)
    f2p, p2p = [], []
    for test, outcome in sorted(gold.items()):
        if outcome not in kept:
            continue
        before, visible = base.get(test), seen.get(test)
        if outcome == PASSED and (
            (before is not None and before != PASSED)
            or (before is None and visible != PASSED)
        ):
            f2p.append(test)
        elif visible == outcome:
            p2p.append(test)
    return f2p, p2p


def validate(case, root: Path, cache: Path) -> Validation:
    """Run the case's base and reference (module docstring)."""
    from django.test import override_settings

    prepared = prepare(case, root, cache)
    toolchain = prepare_toolchain(case.toolchain_folder(), cache)
    hidden = prepared.test_patch
    with override_settings(**toolchain.settings()):
        seen, seen_note = _run_on(prepared, "", with_tests=False)
        base, _ = _run_on(prepared, "") if hidden.strip() else (seen, seen_note)
        gold, gold_note = _run_on(prepared, prepared.patch)
    kept = (PASSED, SKIPPED)
    f2p, p2p = lists(seen, base, gold)
    both = sorted(t for t, s in gold.items() if s not in kept)
    problems = []
    if not gold:
        problems.append(f"the reference run gave no results: {gold_note}")
    if not f2p:
        problems.append("no test fails without the reference and passes with it")
    for test in case.tests.fail_to_pass:
        if base.get(test) == PASSED:
            problems.append(f"FAIL_TO_PASS {test} passes without the reference")
        if gold.get(test) != PASSED:
            problems.append(f"FAIL_TO_PASS {test} does not pass with the reference")
    for test in case.tests.pass_to_pass:
        if gold.get(test) not in kept:
            problems.append(f"PASS_TO_PASS {test} does not pass with the reference")
        if seen.get(test) not in kept:
            problems.append(f"PASS_TO_PASS {test} does not pass on the base")
    base_note = seen_note
    return Validation(case.id, f2p, p2p, both, problems, base_note, gold_note)


def _toml_list(name: str, values: list[str]) -> str:
    lines = "".join(f"  {json.dumps(v, ensure_ascii=False)},\n" for v in values)
    return f"{name} = [\n{lines}]"


def write_lists(path: Path, fail_to_pass: list[str], pass_to_pass: list[str]) -> None:
    """Put the lists into a case file: TOML (the [tests] table's arrays,
    written one test per line) or JSON."""
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        data.setdefault("tests", {}).update(
            fail_to_pass=fail_to_pass, pass_to_pass=pass_to_pass
        )
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    if path.suffix != ".toml":
        raise ValueError(f"{path}: --write handles TOML and JSON case files")
    text = path.read_text()
    for name, values in (
        ("fail_to_pass", fail_to_pass),
        ("pass_to_pass", pass_to_pass),
    ):
        pattern = re.compile(rf"^{name} = \[.*?^\]", re.MULTILINE | re.DOTALL)
        single = re.compile(rf"^{name} = \[[^\n]*\]$", re.MULTILINE)
        replacement = _toml_list(name, values)
        if pattern.search(text):
            text = pattern.sub(lambda _, r=replacement: r, text, count=1)
        elif single.search(text):
            text = single.sub(lambda _, r=replacement: r, text, count=1)
        else:
            text = text.rstrip("\n") + "\n" + replacement + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parse = argparse.ArgumentParser(prog="python -m agents.evaluation.validate")
    where = parse.add_mutually_exclusive_group()
    where.add_argument("--suite", default="")
    where.add_argument("--cases", type=Path)
    parse.add_argument("--case", action="append", default=[])
    parse.add_argument("--write", action="store_true", help="update the lists")
    arguments = parse.parse_args(argv)
    state = use_own_state("eval")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codex.settings")
    import django

    django.setup()
    from agents.evaluation.cases import choose, load_suite, suite_folder

    folder = arguments.cases or suite_folder(arguments.suite or "real")
    failed = 0
    for case in choose(load_suite(folder, check_lists=False), arguments.case):
        found = validate(case, state / "validate", state / "cache")
        print(
            f"{case.id}: FAIL_TO_PASS {len(found.fail_to_pass)}, PASS_TO_PASS "
            f"{len(found.pass_to_pass)}, failing with and without the reference "
            f"{len(found.failing_on_both)} {found.failing_on_both[:5]}"
        )
        print(f"  FAIL_TO_PASS: {found.fail_to_pass[:10]}")
        if arguments.write and found.fail_to_pass:
            write_lists(case.path, found.fail_to_pass, found.pass_to_pass)
            print(f"  written to {case.path}")
        elif found.problems:
            failed += 1
            for problem in found.problems[:10]:
                print(f"  PROBLEM: {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
