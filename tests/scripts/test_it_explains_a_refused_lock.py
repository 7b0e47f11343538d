"""scripts/install-lock.py: `make` installs the hashed locks through it, and
when pip refuses one the newcomer reads what it means and what to do, after
pip's own words. The refusals here are real pip runs on wheels made in the
test (no index, nothing reaches the internet); the others are pip's texts."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-lock.py"


def load_script():
    spec = importlib.util.spec_from_file_location("install_lock", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_wheel(folder: Path, name: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel of `name` 1.0 that needs `requires`."""
    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    files = {
        f"{name}/__init__.py": "",
        f"{info}/METADATA": "Metadata-Version: 2.1\n"
        f"Name: {name}\nVersion: 1.0\n"
        + "".join(f"Requires-Dist: {requirement}\n" for requirement in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    with zipfile.ZipFile(path, "w") as wheel:
        for member, text in files.items():
            wheel.writestr(member, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
            record.append(f"{member},sha256={digest.rstrip(b'=').decode()},{len(text)}")
        record.append(f"{info}/RECORD,,")
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def install(lock: Path, wheels: Path, target: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
        "PIP_TARGET": str(target),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(lock)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def wheels(tmp_path) -> Path:
    folder = tmp_path / "wheels"
    folder.mkdir()
    make_wheel(folder, "parentpkg", ("childpkg>=1.0",))
    make_wheel(folder, "childpkg")
    return folder


def test_a_dependency_the_lock_leaves_out_is_named_with_what_to_do(tmp_path, wheels):
    # As redis on Python 3.11.2 with a lock compiled on 3.11.7: its
    # async-timeout is needed here, and the lock does not pin it.
    lock = tmp_path / "lock.txt"
    parent = wheels / "parentpkg-1.0-py3-none-any.whl"
    lock.write_text(f"parentpkg==1.0 --hash=sha256:{sha256(parent)}\n")
    result = install(lock, wheels, tmp_path / "target")
    assert result.returncode != 0
    assert "all requirements must have their versions pinned" in result.stderr
    explanation = result.stderr.split("Could not install", 1)[1]
    assert "does not pin childpkg (needed by parentpkg)" in explanation
    assert "make lock" in explanation
    assert "make PYTHON=" in explanation
    assert not (tmp_path / "target" / "parentpkg").exists()


def test_a_file_that_differs_from_the_lock_is_said_to(tmp_path, wheels):
    lock = tmp_path / "lock.txt"
    lock.write_text(f"childpkg==1.0 --hash=sha256:{'0' * 64}\n")
    result = install(lock, wheels, tmp_path / "target")
    assert result.returncode != 0
    assert "differs from the one the lock recorded" in result.stderr


def test_a_lock_that_pip_takes_installs_and_says_nothing_more(tmp_path, wheels):
    lock = tmp_path / "lock.txt"
    child = wheels / "childpkg-1.0-py3-none-any.whl"
    lock.write_text(f"childpkg==1.0 --hash=sha256:{sha256(child)}\n")
    result = install(lock, wheels, tmp_path / "target")
    assert result.returncode == 0, result.stderr
    assert "Could not install" not in result.stderr
    assert (tmp_path / "target" / "childpkg" / "__init__.py").exists()


def test_pips_other_refusals_are_explained_and_the_rest_left_alone():
    explain = load_script().explain
    missing = explain(
        "ERROR: Hashes are required in --require-hashes mode, but they are "
        "missing from some requirements.",
        "requirements/prod.txt",
        "3.11.2",
    )
    assert "has no hash" in missing and "make lock" in missing
    unavailable = explain(
        "ERROR: No matching distribution found for google-re2==1.1.20251105",
        "requirements/prod.txt",
        "3.10.13",
    )
    assert "3.10.13" in unavailable and "3.11 or newer" in unavailable
    assert explain("ERROR: Could not install packages: disk full", "x", "3.11") == ""


def test_a_missing_lock_is_a_usage_error(tmp_path):
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "nope.txt")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "does not exist" in result.stderr
