"""The CPU of the repository's own tests, measured apart from the pipeline's
so it can be taken off Codex's CPU per task: one pytest run as QA makes it,
jailed and unjailed."""

from __future__ import annotations

import os
from pathlib import Path


def pytest_cpu(root: Path) -> dict[str, float]:
    """CPU seconds of one QA-style pytest run (the worker's test command with
    the sandbox's python, on a one-test project), with the plugins of the
    environment autoloaded as QA runs it, and with autoloading turned off."""
    import resource
    import subprocess
    import sys

    project = root / "pytest-probe"
    project.mkdir(parents=True)
    (project / "test_probe.py").write_text("def test_probe():\n    assert True\n")
    out = {}
    for name, extra in (
        ("autoload", {}),
        ("no_autoload", {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}),
    ):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [sys.executable, "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=project,
            env={"PATH": os.defpath, "HOME": str(project), "LANG": "C.UTF-8", **extra},
            capture_output=True,
            check=False,
            timeout=120,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out[name] = (after.ru_utime - before.ru_utime) + (
            after.ru_stime - before.ru_stime
        )
    return out


def qa_run_cpu(root: Path, tests: int, runs: int = 3) -> dict[str, float] | None:
    """CPU seconds of one QA test run as the pipeline's workers make it: the
    same command, PATH, environment and read-only venv, through the same
    supervisor, on a project of `tests` feature modules with their tests (the
    pipeline's main grows one per merged task, and QA tests all of it).

    Two figures, medians of `runs`: `seen`, what the runner's child-process
    accounting sees of a run in the jail the workers use (bubblewrap when this
    machine has it: its namespace's init does not hand the command's CPU back
    to the parent, so almost nothing), and `actual`, the same run unjailed.
    The workers' children CPU holds `seen`, not `actual`; the machine's total
    holds `actual`. None when it cannot run."""
    import resource
    import shlex
    import statistics
    import sys

    from integrations.jail import Jail, JailUnavailable, Limits
    from integrations.jail.backends import HostBackend, backend_named
    from tests.live_pipeline import feature_files

    project = root / "qa-probe"
    (project / "features").mkdir(parents=True)
    for number in range(tests):
        for path, text in feature_files(f"FEAT-20260101-probe{number:03d}").items():
            (project / path).write_text(text)
    try:
        jailed = backend_named("bubblewrap")
    except JailUnavailable:
        jailed = HostBackend()
    command = shlex.split("python -B -m pytest -q -p no:cacheprovider")
    out = {}
    for name, backend in (("seen", jailed), ("actual", HostBackend())):
        jail = Jail(
            worktree=project.resolve(),
            backend=backend,
            limits=Limits(wall_seconds=120, cpu_seconds=120),
            path=f"{Path(sys.executable).parent}{os.pathsep}{os.defpath}",
            extra_env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            readonly=tuple({Path(sys.prefix), Path(sys.base_prefix)}),
        )
        samples = []
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            result = jail.run(command)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if result.exit_code != 0:
                return None
            samples.append(
                after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            )
        out[name] = statistics.median(samples)
    return out
