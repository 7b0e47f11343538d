"""Published benchmarks: SWE-bench-format instances as Codex tasks, and a
predictions file for the official harness (docs/eval.md#swe-bench).

    python -m agents.evaluation.swebench --instances verified.jsonl \\
        --repos ~/mirrors --agent model --out var/eval/swebench

Each line of the JSONL is one instance (instance_id, repo, base_commit,
problem_statement, patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS, ... as the
dataset has them; the two lists may be JSON text). The repository comes from
a local git mirror under --repos (`owner__name`, `owner/name` or `name`, with
or without `.git`): nothing is cloned from the network. The instance becomes
a case (its problem statement the request, the gold patch the reference,
the test patch the hidden tests) and runs through the whole pipeline.

`predictions.jsonl` gets a line per instance: instance_id,
model_name_or_path and model_patch, the diff from the base commit to the
merged main branch ("" when nothing was merged), which
`python -m swebench.harness.run_evaluation --predictions_path ...` judges in
its own containers. With --test-command the instance is also judged here,
in the jail, with that command (the official harness's environments are not
needed for small repositories that run with the shipped toolchains).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agents.evaluation.cases import (
    DEFAULT_TEST_FILES,
    Case,
    CaseError,
    Source,
    Tests,
)
from agents.isolation import use_own_state

DEFAULT_COMMAND = (
    "python -B -m pytest -q -p no:cacheprovider --continue-on-collection-errors "
    "-o junit_family=xunit1 --junitxml={junit_xml}"
)
TITLE_CHARS = 120
REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement")


def _tests(value: Any) -> tuple[str, ...]:
    """A test list as the dataset has it: a list, or JSON text of one."""
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CaseError("FAIL_TO_PASS and PASS_TO_PASS are lists of test ids")
    return tuple(value)


def mirror_of(repo: str, repos: Path) -> Path:
    """The local mirror of `repo` ("owner/name") under `repos`."""
    owner, _, name = repo.partition("/")
    for candidate in (
        f"{owner}__{name}",
        f"{owner}/{name}",
        name,
    ):
        for path in (repos / candidate, repos / f"{candidate}.git"):
            if path.is_dir():
                return path
    raise CaseError(
        f"no local mirror of {repo} under {repos} (looked for {owner}__{name}, "
        f"{owner}/{name} and {name}, with or without .git)"
    )


def instance_case(
    instance: dict[str, Any],
    *,
    source: Path,
    repos: Path,
    command: str = DEFAULT_COMMAND,
    report: str = "junit",
    toolchain: str = "pytest",
) -> Case:
    """One instance as a case (module docstring)."""
    missing = [key for key in REQUIRED if not instance.get(key)]
    if missing:
        raise CaseError(f"instance without {', '.join(missing)}")
    statement = str(instance["problem_statement"]).strip()
    first = statement.splitlines()[0].strip() if statement else ""
    title = first[:TITLE_CHARS] or str(instance["instance_id"])
    return Case(
        id=str(instance["instance_id"]),
        path=source.absolute(),
        project=str(instance["repo"]),
        language=str(instance.get("language") or "python"),
        source=Source(
            git=str(mirror_of(str(instance["repo"]), repos)),
            commit=str(instance["base_commit"]),
        ),
        title=title,
        # The problem statement alone, as the benchmark's own runs give it
        # (hints_text and the patches never reach the agents).
        description=statement,
        acceptance_criteria="",
        tests=Tests(
            command=command,
            report=report,
            fail_to_pass=_tests(instance.get("FAIL_TO_PASS", [])),
            pass_to_pass=_tests(instance.get("PASS_TO_PASS", [])),
        ),
        patch=str(instance.get("patch") or ""),
        test_patch=str(instance.get("test_patch") or ""),
        test_files=DEFAULT_TEST_FILES,
        toolchain=toolchain,
        tags=("swe-bench",),
    )


def read_instances(path: Path, only: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The instances of a JSONL file (those named in `only`, when given)."""
    chosen = set(only)
    instances = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            instance = json.loads(line)
        except ValueError as exc:
            raise CaseError(f"{path}:{number}: not JSON: {exc}") from None
        if not chosen or instance.get("instance_id") in chosen:
            instances.append(instance)
    return instances


def model_patch(prepared: Any) -> str:
    """The diff from the base commit to main in the case's repository."""
    from agents.demo import git

    return git("diff", "--binary", prepared.base_sha, "main", cwd=prepared.bare)


def model_name(agent: str) -> str:
    """What the predictions call the system that made them."""
    if agent != "model":
        return f"codex-{agent}"
    from django.conf import settings

    return f"codex+{getattr(settings, 'CODEX_MODEL', None) or 'default'}"


def run_instances(
    cases: list[Case],
    *,
    agent: str,
    root: Path,
    cache: Path,
    out: Path,
    judged: bool,
    say=print,
) -> tuple[Path, list[Any]]:
    """Every case through the pipeline; predictions.jsonl in `out` and the
    results (resolved only where `judged`)."""
    from django.test import override_settings

    from agents.demo import steps_driven_here
    from agents.evaluation.runner import eval_settings, run_case_kept

    root = root.absolute()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "predictions.jsonl"
    results = []
    name = model_name(agent)
    with (
        path.open("w") as predictions,
        override_settings(**eval_settings(root)),
        steps_driven_here(),
    ):
        for case in cases:
            result, prepared = run_case_kept(
                case,
                agent=agent,
                run=1,
                root=root,
                cache=cache.absolute(),
                judged=judged,
            )
            # main moves only by a merge: unmerged, the patch is empty.
            patch = model_patch(prepared) if prepared is not None else ""
            line = {
                "instance_id": case.id,
                "model_name_or_path": name,
                "model_patch": patch,
            }
            predictions.write(json.dumps(line) + "\n")
            say(f"{case.id}: {result.status}, patch of {len(patch)} characters")
            results.append(result)
    return path, results


def main(argv: list[str] | None = None) -> int:
    parse = argparse.ArgumentParser(prog="python -m agents.evaluation.swebench")
    parse.add_argument("--instances", type=Path, required=True, help="JSONL file")
    parse.add_argument("--repos", type=Path, required=True, help="local mirrors")
    parse.add_argument("--instance", action="append", default=[], help="only these")
    parse.add_argument("--agent", choices=("gold", "empty", "model"), default="model")
    parse.add_argument("--out", type=Path, help="default var/eval/swebench")
    parse.add_argument(
        "--test-command",
        default="",
        help="judge here too, with this command ({junit_xml} for its report)",
    )
    parse.add_argument("--report", choices=("junit", "tap"), default="junit")
    parse.add_argument("--toolchain", default="pytest", help="a shipped toolchain")
    arguments = parse.parse_args(argv)
    state = use_own_state("eval")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codex.settings")
    import django

    django.setup()
    from django.core.management import call_command

    # Its own database (agents.isolation): made or brought up to date first.
    call_command("migrate", verbosity=0, interactive=False)

    from agents.evaluation.results import table, write_report
    from codex.configuration.credentials import current_credential

    if arguments.agent == "model" and not current_credential("claude"):
        print("--agent model needs ANTHROPIC_API_KEY", file=sys.stderr)
        return 2
    try:
        cases = [
            instance_case(
                instance,
                source=arguments.instances,
                repos=arguments.repos,
                command=arguments.test_command or DEFAULT_COMMAND,
                report=arguments.report,
                toolchain=arguments.toolchain,
            )
            for instance in read_instances(arguments.instances, arguments.instance)
        ]
    except CaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = arguments.out or state / "swebench"
    work = state / "work" / str(os.getpid())
    path, results = run_instances(
        cases,
        agent=arguments.agent,
        root=work,
        cache=state / "cache",
        out=out,
        judged=bool(arguments.test_command),
    )
    write_report(results, out, agent=arguments.agent, suite=str(arguments.instances))
    shutil.rmtree(work, ignore_errors=True)
    print(table(results, agent=arguments.agent))
    print(f"Predictions for the official harness: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
