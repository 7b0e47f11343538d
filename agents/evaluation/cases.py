"""Evaluation cases as data: one file per case, a folder per suite (docs/eval.md).

A case file (TOML, JSON or YAML) names where the repository comes from (a
registry release pinned by version and sha256, a local archive, a local git
repository at a commit, or a plain folder), what turns it into the case's
base (`break`: a unified diff applied to it), the request a person would
file, the tests that must go from failing to passing (FAIL_TO_PASS) and
those that must keep passing (PASS_TO_PASS), the reference patch, the hidden
tests (`test_patch`), the environment the tests need, its language and tags.

Loading checks the shape and says what is wrong with which file; it reads
nothing from the network (agents.evaluation.sources fetches releases).
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

CASE_SUFFIXES = (".toml", ".json", ".yaml", ".yml")
REGISTRIES = ("pypi", "npm")
REPORTS = ("junit", "tap")
# Where a project keeps its tests, when a case does not say: these files are
# restored from the base before judging, and the reference patch never
# touches them.
DEFAULT_TEST_FILES = (
    "test/**",
    "tests/**",
    "**/test/**",
    "**/tests/**",
    "test_*.py",
    "**/test_*.py",
    "*_test.py",
    "**/*_test.py",
    "*.test.js",
    "**/*.test.js",
    "*.spec.js",
    "**/*.spec.js",
    "conftest.py",
    "**/conftest.py",
)
SUITES_DIR = Path(__file__).resolve().parent / "suites"
TOOLCHAINS = "toolchains"
SHIPPED_TOOLCHAINS = SUITES_DIR / "real" / TOOLCHAINS


class CaseError(ValueError):
    """A case file that cannot be used, and why."""


@dataclass(frozen=True)
class Source:
    """Where the repository comes from. Exactly one of: a registry release
    (`registry`, `package`, `version`, `sha256`), a local `archive` (sha256
    optional), a local `git` repository at `commit`, or a `directory`."""

    registry: str = ""
    package: str = ""
    version: str = ""
    sha256: str = ""
    archive: Path | None = None
    git: str = ""
    commit: str = ""
    directory: Path | None = None

    @property
    def kind(self) -> str:
        if self.registry:
            return "registry"
        if self.archive is not None:
            return "archive"
        if self.git:
            return "git"
        return "directory"

    def describe(self) -> str:
        if self.registry:
            return f"{self.registry}:{self.package}=={self.version}"
        if self.archive is not None:
            return f"archive {self.archive.name}"
        if self.git:
            return f"git {self.git}@{self.commit[:12]}"
        return f"folder {self.directory}"


@dataclass(frozen=True)
class Tests:
    """How the tests run and which count. `command` runs in the jail at the
    repository's root, `{junit_xml}` in it standing for a file it writes;
    `report` says how its results are read (junit: that file; tap: the TAP
    stream on its output)."""

    command: str
    report: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    timeout: int = 900


@dataclass(frozen=True)
class Case:
    """One evaluation case (docs/eval.md#case-files)."""

    id: str
    path: Path
    project: str
    language: str
    source: Source
    title: str
    description: str
    acceptance_criteria: str
    tests: Tests
    break_patch: str = ""
    patch: str = ""
    test_patch: str = ""
    test_files: tuple[str, ...] = DEFAULT_TEST_FILES
    setup_command: str = ""
    setup_hosts: tuple[str, ...] = ()
    toolchain: str = ""
    tags: tuple[str, ...] = ()

    @property
    def folder(self) -> Path:
        return self.path.parent

    def is_test_file(self, path: str) -> bool:
        """Whether `path` (relative to the repository) is one of the case's
        test files."""
        pure = PurePosixPath(path)
        return any(
            fnmatch.fnmatchcase(str(pure), pattern) or pure.match(pattern)
            for pattern in self.test_files
        )

    def toolchain_folder(self) -> Path | None:
        """The folder describing the case's toolchain: <suite>/toolchains/<name>,
        else the shipped suite's (a suite of one's own may use `pytest`)."""
        if not self.toolchain:
            return None
        own = self.folder / TOOLCHAINS / self.toolchain
        return own if own.is_dir() else SHIPPED_TOOLCHAINS / self.toolchain


# -- reading files -------------------------------------------------------------------


def read_data(path: Path) -> dict[str, Any]:
    """The mapping a case file holds, whatever its format."""
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise CaseError(f"{path}: not valid {path.suffix[1:]}: {exc}") from None
    except Exception as exc:  # yaml's own errors
        raise CaseError(f"{path}: cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise CaseError(f"{path}: a case file holds a mapping of fields")
    return data


def _text(data: dict[str, Any], key: str, path: Path, *, required: bool = False):
    value = data.get(key, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise CaseError(f"{path}: {key} must be text")
    if required and not value.strip():
        raise CaseError(f"{path}: {key} is required")
    return value


def _names(data: dict[str, Any], key: str, path: Path) -> tuple[str, ...]:
    value = data.get(key) or []
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CaseError(f"{path}: {key} must be a list of text")
    return tuple(value)


def _local(value: str, folder: Path) -> Path:
    """A path of a case file: absolute, or relative to the file's folder."""
    candidate = Path(value).expanduser()
    return candidate if candidate.is_absolute() else (folder / candidate)


def _source(data: Any, path: Path) -> Source:
    if not isinstance(data, dict):
        raise CaseError(f"{path}: [source] is required")
    kinds = [k for k in ("registry", "archive", "git", "directory") if data.get(k)]
    if len(kinds) != 1:
        raise CaseError(
            f"{path}: [source] names exactly one of registry, archive, git or "
            f"directory (found {', '.join(kinds) or 'none'})"
        )
    folder = path.parent
    sha256 = str(data.get("sha256") or "").lower()
    if sha256 and (
        len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256)
    ):
        raise CaseError(f"{path}: source sha256 must be 64 hexadecimal digits")
    if kinds == ["registry"]:
        registry = str(data["registry"])
        if registry not in REGISTRIES:
            raise CaseError(
                f"{path}: registry must be one of {', '.join(REGISTRIES)}, "
                f"not {registry!r}"
            )
        for key in ("package", "version"):
            if not str(data.get(key) or "").strip():
                raise CaseError(f"{path}: a registry source needs {key}")
        if not sha256:
            raise CaseError(
                f"{path}: a registry source is pinned by its sha256 (of the "
                "downloaded file)"
            )
        return Source(
            registry=registry,
            package=str(data["package"]),
            version=str(data["version"]),
            sha256=sha256,
        )
    if kinds == ["archive"]:
        return Source(archive=_local(str(data["archive"]), folder), sha256=sha256)
    if kinds == ["git"]:
        commit = str(data.get("commit") or "").strip()
        if not commit:
            raise CaseError(f"{path}: a git source needs the base commit")
        git = str(data["git"])
        if "://" not in git:
            git = str(_local(git, folder))
        return Source(git=git, commit=commit)
    return Source(directory=_local(str(data["directory"]), folder))


def _tests(data: Any, path: Path, check_lists: bool) -> Tests:
    if not isinstance(data, dict):
        raise CaseError(f"{path}: [tests] is required")
    command = _text(data, "command", path, required=True)
    report = str(data.get("report") or ("junit" if "{junit_xml}" in command else ""))
    if report not in REPORTS:
        raise CaseError(
            f"{path}: tests.report must be one of {', '.join(REPORTS)} (junit needs "
            "{junit_xml} in the command)"
        )
    if report == "junit" and "{junit_xml}" not in command:
        raise CaseError(f"{path}: a junit report needs {{junit_xml}} in the command")
    fail_to_pass = _names(data, "fail_to_pass", path)
    if not fail_to_pass and check_lists:
        raise CaseError(f"{path}: tests.fail_to_pass names at least one test")
    pass_to_pass = _names(data, "pass_to_pass", path)
    both = set(fail_to_pass) & set(pass_to_pass)
    if both:
        raise CaseError(f"{path}: a test cannot be in both lists: {sorted(both)[0]!r}")
    timeout = data.get("timeout", 900)
    if not isinstance(timeout, int) or timeout < 10:
        raise CaseError(f"{path}: tests.timeout is a number of seconds, at least 10")
    return Tests(command, report, fail_to_pass, pass_to_pass, timeout)


def load_case(path: Path, *, check_lists: bool = True) -> Case:
    """The case in `path`; CaseError says what is wrong with it.
    `check_lists` False lets a case without FAIL_TO_PASS tests load (to
    find them: agents.evaluation.validate)."""
    path = Path(path).absolute()
    data = read_data(path)
    request = data.get("request")
    if not isinstance(request, dict):
        raise CaseError(f"{path}: [request] is required (title, description)")
    environment = data.get("environment") or {}
    if not isinstance(environment, dict):
        raise CaseError(f"{path}: [environment] is a table")
    language = _text(data, "language", path, required=True).lower()
    case = Case(
        id=_text(data, "id", path) or path.stem,
        path=path,
        project=_text(data, "project", path) or path.stem,
        language=language,
        source=_source(data.get("source"), path),
        title=_text(request, "title", path, required=True),
        description=_text(request, "description", path, required=True),
        acceptance_criteria=_text(request, "acceptance_criteria", path),
        tests=_tests(data.get("tests"), path, check_lists),
        break_patch=_text(data, "break", path),
        patch=_text(data, "patch", path),
        test_patch=_text(data, "test_patch", path),
        test_files=_names(data, "test_files", path) or DEFAULT_TEST_FILES,
        setup_command=_text(environment, "setup_command", path),
        setup_hosts=_names(environment, "setup_hosts", path),
        toolchain=_text(environment, "toolchain", path),
        tags=_names(data, "tags", path),
    )
    folder = case.toolchain_folder()
    if folder is not None and not folder.is_dir():
        raise CaseError(f"{path}: toolchain {case.toolchain!r}: no folder {folder}")
    return case


def suite_folder(name: str) -> Path:
    """A suite shipped with Codex, by name (agents/evaluation/suites/<name>)."""
    folder = SUITES_DIR / name
    if not folder.is_dir():
        known = sorted(p.name for p in SUITES_DIR.iterdir() if p.is_dir())
        raise CaseError(f"no suite {name!r}; shipped: {', '.join(known)}")
    return folder


def load_suite(folder: Path, *, check_lists: bool = True) -> list[Case]:
    """Every case file directly in `folder`, by file name; ids are unique."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CaseError(f"{folder}: not a folder of case files")
    cases = [
        load_case(path, check_lists=check_lists)
        for path in sorted(folder.iterdir())
        if path.suffix in CASE_SUFFIXES and path.is_file()
    ]
    if not cases:
        raise CaseError(f"{folder}: holds no case file ({', '.join(CASE_SUFFIXES)})")
    seen: dict[str, Path] = {}
    for case in cases:
        if case.id in seen:
            raise CaseError(
                f"{case.path}: id {case.id!r} is already used by {seen[case.id]}"
            )
        seen[case.id] = case.path
    return cases


def choose(cases: list[Case], ids: list[str], tags: list[str] = ()) -> list[Case]:
    """The cases named in `ids` (all when none), then those with every tag."""
    if ids:
        known = {case.id for case in cases}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise CaseError(f"no case {unknown[0]!r} in the suite")
        cases = [case for case in cases if case.id in set(ids)]
    for tag in tags:
        cases = [case for case in cases if tag in case.tags]
    return cases
