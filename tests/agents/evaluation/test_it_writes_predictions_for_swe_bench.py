"""SWE-bench-format instances from a local JSONL and local git mirrors run as
Codex tasks; predictions.jsonl has what the official harness reads (here a
two-instance fixture: two tiny repositories made in the test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.demo import git
from agents.evaluation.results import table
from agents.evaluation.swebench import (
    instance_case,
    mirror_of,
    read_instances,
    run_instances,
)
from tests.agents.evaluation.conftest import diff

pytestmark = pytest.mark.django_db(transaction=True)

REPOS = {
    "acme/calc": {
        "base": {
            "calc.py": "def add(a, b):\n    return a + b\n",
            "tests/test_calc.py": "from calc import add\n\n\n"
            "def test_add():\n    assert add(1, 2) == 3\n",
        },
        "fix": {
            "calc.py": "def add(a, b):\n    return a + b\n\n\n"
            "def sub(a, b):\n    return a - b\n"
        },
        "tests": {
            "tests/test_calc.py": "from calc import add, sub\n\n\n"
            "def test_add():\n    assert add(1, 2) == 3\n\n\n"
            "def test_sub():\n    assert sub(3, 2) == 1\n"
        },
        "f2p": ["tests/test_calc.py::test_sub"],
        "p2p": ["tests/test_calc.py::test_add"],
        "statement": "calc has no subtraction\n\nPlease add sub(a, b).",
    },
    "acme/greet": {
        "base": {
            "greet.py": "def hello(name):\n    return 'hello ' + name\n",
            "tests/test_greet.py": "from greet import hello\n\n\n"
            "def test_hello():\n    assert hello('x') == 'hello x'\n",
        },
        "fix": {
            "greet.py": "def hello(name):\n    return 'hello ' + name\n\n\n"
            "def bye(name):\n    return 'bye ' + name\n"
        },
        "tests": {
            "tests/test_bye.py": "from greet import bye\n\n\n"
            "def test_bye():\n    assert bye('x') == 'bye x'\n"
        },
        "f2p": ["tests/test_bye.py::test_bye"],
        "p2p": ["tests/test_greet.py::test_hello"],
        "statement": "Say goodbye too: add bye(name).",
    },
}


def make_mirror(folder: Path, files: dict[str, str]) -> str:
    """A git repository of `files` with a later commit on top (as a mirror
    has history past the base); the base commit's sha."""
    folder.mkdir(parents=True)
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    git("init", "--quiet", "-b", "main", cwd=folder)
    git("add", "--all", cwd=folder)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "base", cwd=folder)
    base = git("rev-parse", "HEAD", cwd=folder).strip()
    (folder / "LATER.md").write_text("after the base\n")
    git("add", "--all", cwd=folder)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "later", cwd=folder)
    return base


@pytest.fixture
def fixture(tmp_path) -> tuple[Path, Path, dict[str, str]]:
    """(instances.jsonl, mirrors folder, base commit by instance id)."""
    mirrors = tmp_path / "mirrors"
    lines, bases = [], {}
    for number, (repo, spec) in enumerate(REPOS.items(), 1):
        base = make_mirror(mirrors / repo.replace("/", "__"), spec["base"])
        instance_id = f"{repo.replace('/', '__')}-{number}"
        bases[instance_id] = base
        lines.append(
            {
                "instance_id": instance_id,
                "repo": repo,
                "base_commit": base,
                "problem_statement": spec["statement"],
                "patch": diff(spec["base"], {**spec["base"], **spec["fix"]}),
                "test_patch": diff(spec["base"], {**spec["base"], **spec["tests"]}),
                # As the published dataset has them: JSON text.
                "FAIL_TO_PASS": json.dumps(spec["f2p"]),
                "PASS_TO_PASS": json.dumps(spec["p2p"]),
                "version": "1.0",
            }
        )
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path, mirrors, bases


def cases_of(path: Path, mirrors: Path, only=()):
    return [
        instance_case(instance, source=path, repos=mirrors)
        for instance in read_instances(path, only)
    ]


def test_an_instance_becomes_a_case(fixture):
    path, mirrors, bases = fixture

    calc, greet = cases_of(path, mirrors)

    assert calc.id == "acme__calc-1" and calc.title == "calc has no subtraction"
    assert calc.source.git == str(mirror_of("acme/calc", mirrors))
    assert calc.source.commit == bases["acme__calc-1"]
    assert list(calc.tests.fail_to_pass) == ["tests/test_calc.py::test_sub"]
    assert greet.test_patch.startswith("--- a/tests/test_bye.py")


def test_gold_predictions_hold_the_merged_change(fixture, venv_toolchain, tmp_path):
    path, mirrors, bases = fixture
    out = tmp_path / "out"

    predictions, results = run_instances(
        cases_of(path, mirrors),
        agent="gold",
        root=tmp_path / "work",
        cache=tmp_path / "cache",
        out=out,
        judged=True,
    )

    assert [r.resolved for r in results] == [True, True], [r.note for r in results]
    lines = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert [line["instance_id"] for line in lines] == ["acme__calc-1", "acme__greet-2"]
    for line, (repo, spec) in zip(lines, REPOS.items(), strict=True):
        assert set(line) == {"instance_id", "model_name_or_path", "model_patch"}
        assert line["model_name_or_path"] == "codex-gold"
        # The patch applies to the repository at its base commit, and gives
        # the fixed files.
        checkout = tmp_path / "check" / repo
        git(
            "clone",
            "--quiet",
            str(mirrors / repo.replace("/", "__")),
            str(checkout),
            cwd=tmp_path,
        )
        git("checkout", "--quiet", bases[line["instance_id"]], cwd=checkout)
        (checkout.parent / "model.diff").write_text(line["model_patch"])
        git("apply", str(checkout.parent / "model.diff"), cwd=checkout)
        for file, text in spec["fix"].items():
            assert (checkout / file).read_text() == text


def test_an_unmerged_task_predicts_an_empty_patch(fixture, tmp_path, venv_toolchain):
    path, mirrors, _ = fixture

    predictions, results = run_instances(
        cases_of(path, mirrors, ["acme__greet-2"]),
        agent="empty",
        root=tmp_path / "work",
        cache=tmp_path / "cache",
        out=tmp_path / "out",
        judged=False,
    )

    (line,) = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert line["instance_id"] == "acme__greet-2" and line["model_patch"] == ""
    assert not results[0].resolved and not results[0].judged
    assert "Not judged here" in table(results, agent="empty")
