"""Install a hashed lock (requirements/*.txt) into the running Python's
environment, and say what a refusal means when pip refuses it.

`make` runs it with the virtual environment's Python before anything else is
installed, so it uses the standard library only. pip's own words come first,
as pip printed them; when it fails, a short explanation follows with what to
do. Usage: python scripts/install-lock.py requirements/prod.txt
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

# pip's words for each refusal of a hashed install.
UNPINNED = "all requirements must have their versions pinned"
MISSING_HASHES = "Hashes are required in --require-hashes mode"
WRONG_HASHES = "DO NOT MATCH THE HASHES"
NO_DISTRIBUTION = "No matching distribution found for"
# "    async-timeout>=4.0.3 from https://... (from redis==8.1.0->-r ...)"
UNPINNED_LINE = re.compile(
    r"^\s+(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\S*.*?\(from (?P<parent>[^)=<>!~ ]+)",
    re.M,
)


def explain(output: str, lock: str, python: str) -> str:
    """What pip's refusal of `lock` on Python `python` means and what to do;
    "" when it is none of the hashed-install refusals."""
    if UNPINNED in output:
        needs = sorted(
            {
                f"{match['name']} (needed by {match['parent']})"
                for match in UNPINNED_LINE.finditer(output)
            }
        )
        what = ", ".join(needs) or "a package"
        return (
            f"The lock {lock} does not pin {what}, which this Python ({python}) "
            "needs: the lock was compiled on a Python where that dependency is "
            "not needed, and pip installs nothing unpinned from a hashed lock. "
            "This is a fault of Codex's lock: add the package to "
            "requirements/base.in and run `make lock` (or report it). Until "
            "then, use another Python: make PYTHON=/path/to/python3.12 run"
        )
    if MISSING_HASHES in output:
        return (
            f"A line of {lock} has no hash (edited by hand?): every line must "
            "come from `make lock`. Run `make lock` and try again."
        )
    if WRONG_HASHES in output:
        return (
            "A downloaded file differs from the one the lock recorded: a proxy "
            "or a package mirror (PIP_INDEX_URL) served another file, or the "
            "download was cut short. Try again, or point pip at PyPI."
        )
    if NO_DISTRIBUTION in output:
        return (
            f"A package pinned in {lock} has no release for this Python "
            f"({python}) or this machine, or the package index could not be "
            "reached. Codex needs CPython 3.11 or newer (README.md)."
        )
    return ""


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: install-lock.py requirements/<lock>.txt", file=sys.stderr)
        return 2
    lock = argv[1]
    if not Path(lock).is_file():
        print(f"install-lock.py: {lock} does not exist", file=sys.stderr)
        return 2
    command = [sys.executable, "-m", "pip", "install", "--quiet"]
    command += ["--require-hashes", "-r", lock]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    said = []
    assert process.stderr is not None
    for line in process.stderr:  # pip's words, as it says them
        sys.stderr.write(line)
        said.append(line)
    status = process.wait()
    if status == 0:
        return 0
    python = ".".join(str(part) for part in sys.version_info[:3])
    explanation = explain("".join(said), lock, python)
    if explanation:
        print(f"\nCould not install {lock}: {explanation}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
