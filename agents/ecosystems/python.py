"""Python projects: pyproject.toml, setup.py/setup.cfg, requirements files,
Pipfile, tox.ini, noxfile.py.

The setup makes a venv at `.venv` (first on the jail's PATH) and installs
what the files name: uv or poetry when their lock file is there and the tool
is installed where commands run, else pip with the requirements files, the
project itself (editable, with its test/dev extras) and the test runner.
The runner is pytest unless the repository shows only unittest.
"""

from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from typing import Any

from agents.ecosystems.model import Ecosystem, Which
from agents.ecosystems.tree import Tree, safe_path

HOSTS = ("pypi.org", "files.pythonhosted.org")
MANIFESTS = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "Pipfile",
    "tox.ini",
    "noxfile.py",
)
LOCKS = ("uv.lock", "poetry.lock", "Pipfile.lock")
# The extras and groups that hold what tests need.
TEST_EXTRAS = ("test", "tests", "testing", "dev")
# requirements.txt, requirements-dev.txt, dev-requirements.txt, requirements/test.txt
REQUIREMENTS = re.compile(
    r"^(?:(?:(?P<a>[\w-]*?)[-_])?requirements(?:[-_](?P<b>[\w-]+))?\.txt"
    r"|requirements/(?P<c>[\w-]+)\.txt)$"
)
INSTALLED_REQUIREMENTS = {"", "base", "common", "main", "requirements", "dev", "test"}
INSTALLED_REQUIREMENTS |= {"tests", "testing", "develop"}
# A requirement spliced into pip's command line: a name, extras and versions.
REQUIREMENT = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?[<>=!~., 0-9A-Za-z*+-]*$"
)
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MAX_REQUIREMENTS = 100
MAX_SNIFFED_TESTS = 20
SNIFF_BYTES = 200_000
PYTEST_COMMAND = "python3 -B -m pytest -q -p no:cacheprovider --junitxml={junit_xml}"
TEST_FOLDERS = ("tests", "test")


def _toml(tree: Tree, path: str) -> dict[str, Any]:
    text = tree.read(path)
    if not text:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _ini(tree: Tree, path: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    text = tree.read(path)
    if text:
        try:
            parser.read_string(text)
        except configparser.Error:
            return configparser.ConfigParser(interpolation=None)
    return parser


def _table(data: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _requirements(items: Any) -> list[str]:
    """The plain requirement strings of a list (no markers, URLs or includes)."""
    if not isinstance(items, list):
        return []
    return [
        item.strip()
        for item in items
        if isinstance(item, str) and REQUIREMENT.match(item.strip())
    ]


def requirement_files(tree: Tree) -> list[str]:
    """Every tracked requirements file (they all key the cache)."""
    return [p for p in tree.files() if REQUIREMENTS.match(p) and safe_path(p)]


def _installed_requirement_files(files: list[str]) -> list[str]:
    chosen = []
    for path in files:
        match = REQUIREMENTS.match(path)
        if match is None:
            continue
        kind = (match["a"] or match["b"] or match["c"] or "").lower()
        if kind in INSTALLED_REQUIREMENTS:
            chosen.append(path)
    return chosen


def _tox_deps(tox: configparser.ConfigParser) -> tuple[list[str], list[str]]:
    """Requirements and requirement files of tox's [testenv] deps."""
    if not tox.has_section("testenv"):
        return [], []
    requirements, files = [], []
    for line in tox.get("testenv", "deps", fallback="").splitlines():
        line = line.strip()
        if line.startswith("-r"):
            files.append(line[2:].strip())
        elif REQUIREMENT.match(line):
            requirements.append(line)
    return requirements, files


def _runner(tree: Tree, project: dict[str, Any], mentioned: str) -> str:
    """pytest or unittest: pytest's own configuration or any mention of it
    wins; then the tests themselves; pytest when nothing says (it runs
    unittest tests too)."""
    setup_cfg = _ini(tree, "setup.cfg") if tree.has("setup.cfg") else None
    tox = _ini(tree, "tox.ini") if tree.has("tox.ini") else None
    if (
        tree.has("pytest.ini")
        or tree.has("conftest.py")
        or any(tree.has(f"{folder}/conftest.py") for folder in TEST_FOLDERS)
        or _table(project, "tool", "pytest")
        or (setup_cfg is not None and setup_cfg.has_section("tool:pytest"))
        or (tox is not None and tox.has_section("pytest"))
        or re.search(r"\bpytest\b", mentioned)
    ):
        return "pytest"
    if "unittest" in mentioned:
        return "unittest"
    tests = [
        path
        for path in tree.files()
        if re.search(r"(^|/)(test_[^/]*|[^/]*_test)\.py$", path)
    ][:MAX_SNIFFED_TESTS]
    texts = [tree.read(path, SNIFF_BYTES) or "" for path in tests]
    if any(re.search(r"^\s*(import|from) pytest\b|@pytest\.", t, re.M) for t in texts):
        return "pytest"
    if any(re.search(r"\bunittest\b", t) for t in texts):
        return "unittest"
    return "pytest"


def _unittest_command(tree: Tree) -> str:
    folder = next((f for f in TEST_FOLDERS if f in tree.dirs), "")
    if not folder:
        return "python3 -B -m unittest discover"
    if tree.has(f"{folder}/__init__.py"):
        return f"python3 -B -m unittest discover -s {folder} -t ."
    return f"python3 -B -m unittest discover -s {folder}"


def _pip_setup(
    tree: Tree, project: dict[str, Any], runner: str, tox_deps: tuple[list, list]
) -> str:
    """venv + pip: requirements files, the project with its test extras, the
    test groups' requirements, tox's deps and the runner."""
    args: list[str] = []
    files = _installed_requirement_files(requirement_files(tree))
    files += [f for f in tox_deps[1] if f not in files and tree.has(f)]
    for path in files:
        if safe_path(path):
            args += ["-r", path]
    installable = (
        tree.has("setup.py")
        or "project" in project
        or "build-system" in project
        or bool(_table(project, "tool", "poetry"))
    )
    if installable:
        extras = list(_table(project, "project", "optional-dependencies"))
        if tree.has("setup.cfg"):
            cfg = _ini(tree, "setup.cfg")
            if cfg.has_section("options.extras_require"):
                extras += list(cfg["options.extras_require"])
        chosen = [e for e in TEST_EXTRAS if e in extras and NAME.match(e)]
        args += ["-e", f".[{','.join(chosen)}]" if chosen else "."]
    requirements: list[str] = []
    groups = _table(project, "dependency-groups")
    for group in TEST_EXTRAS:
        requirements += _requirements(groups.get(group))
    requirements += tox_deps[0]
    if runner == "pytest":
        requirements.append("pytest")
    for requirement in dict.fromkeys(requirements[:MAX_REQUIREMENTS]):
        args.append(requirement)
    if not args:
        return ""
    return (
        "python3 -m venv .venv && .venv/bin/python -m pip install "
        "--disable-pip-version-check --no-input "
        + " ".join(shlex.quote(arg) for arg in args)
    )


def _locked_setup(tree: Tree, project: dict[str, Any], which: Which) -> str:
    """uv's, poetry's or pipenv's own install from their lock file, when the
    tool is where commands run; "" otherwise."""
    if tree.has("uv.lock") and which("uv"):
        return (
            "UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never UV_PROJECT_ENVIRONMENT=.venv "
            "uv sync --frozen"
        )
    if tree.has("poetry.lock") and which("poetry"):
        groups = [
            g for g in TEST_EXTRAS if g in _table(project, "tool", "poetry", "group")
        ]
        extra = f" --with {','.join(groups)}" if groups else ""
        return (
            "POETRY_VIRTUALENVS_IN_PROJECT=true POETRY_NO_INTERACTION=1 "
            f"poetry install{extra}"
        )
    if tree.has("Pipfile.lock") and which("pipenv"):
        return "PIPENV_VENV_IN_PROJECT=1 pipenv sync --dev"
    return ""


def detect(tree: Tree, which: Which) -> Ecosystem | None:
    """The Python project at the top of `tree`, or None."""
    requirements = requirement_files(tree)
    manifests = tuple(m for m in MANIFESTS if tree.has(m)) + tuple(requirements)
    if not manifests:
        return None
    project = _toml(tree, "pyproject.toml") if tree.has("pyproject.toml") else {}
    tox = _ini(tree, "tox.ini") if tree.has("tox.ini") else None
    tox_deps = _tox_deps(tox) if tox is not None else ([], [])
    mentioned = " ".join(
        [
            repr(_table(project, "project", "optional-dependencies")),
            repr(_table(project, "dependency-groups")),
            repr(_table(project, "tool", "poetry")),
            " ".join(tree.read(path) or "" for path in requirements),
            tree.read("noxfile.py") or "",
            tox.get("testenv", "commands", fallback="") if tox else "",
            " ".join(tox_deps[0]),
        ]
    )
    runner = _runner(tree, project, mentioned)
    notes: list[str] = []
    setup = _locked_setup(tree, project, which)
    if not setup:
        for lock, tool in (
            ("uv.lock", "uv"),
            ("poetry.lock", "poetry"),
            ("Pipfile.lock", "pipenv"),
        ):
            if tree.has(lock):
                notes.append(
                    f"{lock}: {tool} is not installed where commands run; pip "
                    "installs from the manifests instead (the lock is not used)"
                )
        setup = _pip_setup(tree, project, runner, tox_deps)
    locks = tuple(lock for lock in LOCKS if tree.has(lock))
    return Ecosystem(
        name="python",
        manifests=manifests,
        key_files=locks + manifests,
        setup=setup,
        test=PYTEST_COMMAND if runner == "pytest" else _unittest_command(tree),
        runner=runner,
        hosts=HOSTS,
        notes=tuple(notes),
    )
