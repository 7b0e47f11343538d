"""The hashed locks install on every Python the README names (3.11 and
newer): whatever a locked package needs on any of them is locked too.

pip-compile evaluates markers for the Python that runs it, so a lock
compiled on 3.11.7 left out async-timeout, which redis needs below 3.11.3
(Debian 12's python3 is 3.11.2), and `pip install --require-hashes` refused
the lock there. The packages' own requirements are read from their installed
metadata (the suite runs with the dev lock installed) and their markers
evaluated for each Python; .ci/oldest-python.sh installs the lock on Debian's
3.11.2 for real.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
# The first and last patch releases of 3.11 around the markers seen in the
# locks (python_full_version < "3.11.3"), and the releases after it.
PYTHONS = ("3.11.0", "3.11.2", "3.11.3", "3.12.0", "3.13.0", "3.14.0")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", re.M)


def locked(lock: str) -> dict[str, str]:
    text = (ROOT / "requirements" / lock).read_text()
    return {canonicalize_name(name): version for name, version in PIN.findall(text)}


def environment(python: str) -> dict[str, str]:
    return {
        **default_environment(),
        "python_full_version": python,
        "python_version": ".".join(python.split(".")[:2]),
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "extra": "",
    }


def needed(package: str, python: str) -> set[str]:
    """What `package` (as installed) requires on `python`, extras aside."""
    requirements = importlib.metadata.requires(package) or []
    names = set()
    for text in requirements:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or marker.evaluate(environment(python)):
            names.add(canonicalize_name(requirement.name))
    return names


@pytest.mark.parametrize("lock", ["prod.txt", "dev.txt"])
def test_every_requirement_on_every_named_python_is_locked(lock):
    pins = locked(lock)
    missing = []
    for package, version in sorted(pins.items()):
        try:
            installed = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here (another lock's)
        if installed != version:
            continue  # its metadata here is another release's
        for python in PYTHONS:
            for name in sorted(needed(package, python) - set(pins)):
                missing.append(f"{name} (needed by {package} on Python {python})")
    assert not sorted(set(missing)), (
        f"requirements/{lock} lacks: {sorted(set(missing))}; add them to "
        "requirements/base.in and run `make lock`"
    )


def test_the_direct_pins_name_async_timeout_for_redis():
    base = (ROOT / "requirements" / "base.in").read_text()
    assert re.search(r"^async-timeout==", base, re.M)
