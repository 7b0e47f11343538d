"""A tiny project released as an archive, and case files about it: `mini`
(add and mul, with pytest tests, one of them failing on the release already),
its break (mul and its test removed) and the toolchain its tests run with
(this venv's pytest, bound into the jail by the test settings)."""

from __future__ import annotations

import difflib
import hashlib
import io
import sys
import tarfile
from pathlib import Path

import pytest

from agents.evaluation import runner, validate
from agents.evaluation.toolchains import Toolchain
from tests.conftest import TOOLCHAIN_PATHS

MINI = {
    "mini.py": (
        "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
    ),
    "tests/test_mini.py": (
        "from mini import add, mul\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_mul():\n    assert mul(2, 3) == 6\n\n\n"
        "def test_float_sum():\n"
        "    # Fails on the release already: floats do not add up exactly.\n"
        "    assert add(0.1, 0.2) == 0.3\n"
    ),
    "README.md": "# mini\n\nAdds and multiplies.\n",
}
BROKEN = {
    **MINI,
    "mini.py": "def add(a, b):\n    return a + b\n",
    "tests/test_mini.py": MINI["tests/test_mini.py"]
    .replace("from mini import add, mul", "from mini import add")
    .replace("def test_mul():\n    assert mul(2, 3) == 6\n\n\n", ""),
}


def diff(old: dict[str, str], new: dict[str, str]) -> str:
    """A unified diff from `old` to `new` (path: text), as git apply reads it."""
    return "".join(
        "".join(
            difflib.unified_diff(
                old.get(path, "").splitlines(True),
                new.get(path, "").splitlines(True),
                f"a/{path}",
                f"b/{path}",
            )
        )
        for path in sorted(set(old) | set(new))
        if old.get(path) != new.get(path)
    )


# mul and its test removed: what the agents are asked to add back.
BREAK = diff(MINI, BROKEN)
PYTEST = (
    "python -B -m pytest -q -p no:cacheprovider --continue-on-collection-errors "
    "-o junit_family=xunit1 --junitxml={junit_xml}"
)
F2P = ["tests/test_mini.py::test_mul"]
P2P = ["tests/test_mini.py::test_add"]
VENV_TOOLCHAIN = Toolchain(
    path=[str(Path(sys.prefix) / "bin")],
    readonly=list(TOOLCHAIN_PATHS),
    env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
)


def make_release(folder: Path, files: dict[str, str] = MINI) -> tuple[Path, str]:
    """mini-1.0.tar.gz in `folder` (files under mini-1.0/, as an sdist);
    its path and sha256."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / "mini-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"mini-1.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


def _list(values: list[str]) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


def case_toml(
    sha256: str,
    *,
    case_id: str = "mini-mul",
    fail_to_pass: list[str] = F2P,
    pass_to_pass: list[str] = P2P,
    break_patch: str = BREAK,
    extra: str = "",
) -> str:
    """A case about mini, as a TOML case file holds it."""
    return f"""\
id = "{case_id}"
project = "mini"
language = "python"
tags = ["python", "feature-removed"]
{extra}
break = '''
{break_patch}'''

[source]
archive = "mini-1.0.tar.gz"
sha256 = "{sha256}"

[request]
title = "Add mul(a, b)"
description = '''
mini can add but not multiply: add mul(a, b), the product of a and b.
'''
acceptance_criteria = '''
- mul(2, 3) == 6
'''

[tests]
command = "{PYTEST}"
fail_to_pass = {_list(fail_to_pass)}
pass_to_pass = {_list(pass_to_pass)}
"""


@pytest.fixture
def mini_suite(tmp_path) -> Path:
    """A suite folder (outside the repository) with the mini-mul case."""
    folder = tmp_path / "suite"
    _, sha256 = make_release(folder)
    (folder / "mini-mul.toml").write_text(case_toml(sha256))
    return folder


@pytest.fixture
def venv_toolchain(monkeypatch):
    """The cases' tests run with this venv's pytest (no download)."""

    def prepare(folder, cache):
        return VENV_TOOLCHAIN

    monkeypatch.setattr(runner, "prepare_toolchain", prepare)
    monkeypatch.setattr(validate, "prepare_toolchain", prepare, raising=False)
    return VENV_TOOLCHAIN
