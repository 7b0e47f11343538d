"""A case's repository, made from its source (docs/eval.md#sources).

A registry release is downloaded once from PyPI (the sdist) or npm (the
tarball) through the registries' JSON APIs and kept under the cache folder
by its sha256; a file whose sha256 is not the case's pin is refused. No
package's own code runs on the host: `pip download` would run an sdist's
build backend to read its metadata, so the file is fetched as plain bytes.
Archives are unpacked with every member checked (regular files and folders
only, nothing outside the destination).

The base repository is the release (or archive, git commit or folder) with
the case's `break` applied, committed as the only commit of `main` in a bare
repository on the local forge: nothing of the pristine release is reachable
from it. The reference patch and the hidden tests, when the case does not
give them, are what turns the base back into the release: the changes to
test files (Case.test_files) are the hidden tests, the rest the reference
patch.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agents.demo import git
from agents.evaluation.cases import Case

PYPI_URL = os.environ.get("CODEX_EVAL_PYPI_URL", "https://pypi.org")
NPM_REGISTRY = os.environ.get("CODEX_EVAL_NPM_REGISTRY", "https://registry.npmjs.org")
DOWNLOAD_TIMEOUT_SECONDS = 120
MAX_DOWNLOAD_BYTES = 200_000_000
BASE_MESSAGE = "base"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
SDIST_SUFFIXES = (".tar.gz", ".zip")


class SourceError(RuntimeError):
    """A source that cannot be fetched, verified or unpacked."""


@dataclass
class Prepared:
    """A case's base repository and what the scripted agents and the judge
    need: the base commit, the reference patch, the hidden tests, and the
    files the reference patch leaves (path: content, None when deleted)."""

    case: Case
    bare: Path
    base_sha: str
    patch: str
    test_patch: str
    gold_files: dict[str, str | None] = field(default_factory=dict)


# -- downloads ---------------------------------------------------------------------


def _get(url: str, limit: int = MAX_DOWNLOAD_BYTES, accept: str = "") -> bytes:
    headers = {"User-Agent": "codex-eval"}
    if accept:
        headers["Accept"] = accept
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_SECONDS) as reply:
            data = reply.read(limit + 1)
    except OSError as exc:
        raise SourceError(f"cannot fetch {url}: {exc}") from None
    if len(data) > limit:
        raise SourceError(f"{url} is larger than {limit} bytes")
    return data


def _release_file(
    registry: str, package: str, version: str, sha256: str
) -> tuple[str, str, str]:
    """(url, file name, the registry's own integrity) of a release's sdist
    or tarball. On PyPI, the file of the project's index (the simple API's
    JSON form, as pip reads it) whose sha256 is the pin."""
    if registry == "pypi":
        project = re.sub(r"[-_.]+", "-", package).lower()
        index = json.loads(_get(f"{PYPI_URL}/simple/{project}/", 10**8, SIMPLE_JSON))
        for entry in index.get("files", []):
            if (entry.get("hashes") or {}).get("sha256") == sha256:
                name = entry["filename"]
                if version not in name or not name.endswith(SDIST_SUFFIXES):
                    raise SourceError(
                        f"PyPI's file with sha256 {sha256} is {name}, not an sdist "
                        f"of {package} {version}"
                    )
                return (
                    urllib.parse.urljoin(f"{PYPI_URL}/simple/{project}/", entry["url"]),
                    name,
                    sha256,
                )
        raise SourceError(f"PyPI has no file of {package} with sha256 {sha256}")
    quoted = urllib.parse.quote(package, safe="@")
    meta = json.loads(_get(f"{NPM_REGISTRY}/{quoted}/{version}", 10**7))
    dist = meta.get("dist") or {}
    if not dist.get("tarball"):
        raise SourceError(f"npm has no tarball of {package} {version}")
    name = f"{package.replace('/', '-').lstrip('@')}-{version}.tgz"
    return dist["tarball"], name, dist.get("integrity", "")


def _matches_integrity(data: bytes, integrity: str) -> bool:
    """The registry's own check: a sha256 hex digest (PyPI) or an SRI
    string (npm's sha512-...)."""
    if not integrity:
        return True
    if "-" not in integrity:
        return hashlib.sha256(data).hexdigest() == integrity
    algorithm, _, expected = integrity.split()[0].partition("-")
    if algorithm not in ("sha256", "sha384", "sha512"):
        return True
    digest = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    return digest == expected


def fetch_release(registry: str, package: str, version: str, sha256: str, cache: Path):
    """The release file, from the cache or downloaded now; refused unless
    its sha256 is `sha256`."""
    folder = cache / "releases" / registry / sha256
    if folder.is_dir():
        for kept in folder.iterdir():
            if hashlib.sha256(kept.read_bytes()).hexdigest() == sha256:
                return kept
    url, name, integrity = _release_file(registry, package, version, sha256)
    data = _get(url)
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise SourceError(
            f"{registry} {package} {version}: the file has sha256 {actual}, the "
            f"case pins {sha256}; refused"
        )
    if not _matches_integrity(data, integrity):
        raise SourceError(f"{url}: does not match the registry's own integrity")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / Path(name).name
    partial = path.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(path)
    return path


# -- unpacking -------------------------------------------------------------------------


def _safe_name(name: str) -> PurePosixPath | None:
    """A member's path when it stays inside the destination, else None."""
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        return None
    return pure


def unpack(archive: Path, dest: Path) -> None:
    """Unpack a .tar.gz, .tgz, .tar or .zip into `dest`: regular files and
    folders only, each inside `dest`; links and devices are left out."""
    dest.mkdir(parents=True, exist_ok=True)
    members: list[tuple[PurePosixPath, bytes, bool]] = []
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as handle:
            for info in handle.infolist():
                pure = _safe_name(info.filename)
                if pure is None or info.is_dir():
                    continue
                mode = (info.external_attr >> 16) & 0o777
                members.append((pure, handle.read(info), bool(mode & 0o100)))
    else:
        try:
            with tarfile.open(archive) as handle:
                for info in handle.getmembers():
                    pure = _safe_name(info.name)
                    if pure is None or not info.isfile():
                        continue
                    data = handle.extractfile(info).read()
                    members.append((pure, data, bool(info.mode & 0o100)))
        except tarfile.TarError as exc:
            raise SourceError(f"{archive.name}: not an archive: {exc}") from None
    for pure, data, executable in members:
        target = dest.joinpath(*pure.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o755 if executable else 0o644)


def _strip_top_folder(folder: Path) -> Path:
    """The release's own root: an sdist's `name-version/`, npm's `package/`."""
    entries = list(folder.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return folder


def pristine_tree(case: Case, cache: Path, dest: Path) -> Path:
    """The case's source as files in a folder under `dest` (returned)."""
    source = case.source
    if source.kind == "directory":
        if not source.directory or not source.directory.is_dir():
            raise SourceError(f"{case.path}: no folder {source.directory}")
        root = dest / "tree"
        shutil.copytree(source.directory, root, ignore=shutil.ignore_patterns(".git"))
        return root
    if source.kind == "git":
        root = dest / "tree"
        git("clone", "--quiet", "--no-checkout", source.git, str(root), cwd=dest)
        git("checkout", "--quiet", "--detach", source.commit, cwd=root)
        shutil.rmtree(root / ".git")
        return root
    if source.kind == "archive":
        archive = source.archive
        if archive is None or not archive.is_file():
            raise SourceError(f"{case.path}: no archive {archive}")
        if source.sha256:
            actual = hashlib.sha256(archive.read_bytes()).hexdigest()
            if actual != source.sha256:
                raise SourceError(
                    f"{archive}: sha256 {actual}, the case pins {source.sha256}"
                )
    else:
        archive = fetch_release(
            source.registry, source.package, source.version, source.sha256, cache
        )
    unpack(archive, dest / "unpacked")
    return _strip_top_folder(dest / "unpacked")


# -- the base repository ---------------------------------------------------------------


def _apply(patch: str, cwd: Path, what: str, case: Case) -> None:
    if not patch.strip():
        return
    with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as handle:
        handle.write(patch if patch.endswith("\n") else patch + "\n")
    try:
        git("apply", "--whitespace=nowarn", handle.name, cwd=cwd)
    except Exception as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        raise SourceError(f"{case.path}: its {what} does not apply: {detail}") from None
    finally:
        os.unlink(handle.name)


def _commit(cwd: Path, message: str) -> str:
    git("add", "--all", cwd=cwd)
    git(
        "-c",
        "commit.gpgsign=false",
        "commit",
        "--quiet",
        "--allow-empty",
        "--no-verify",
        "-m",
        message,
        cwd=cwd,
    )
    return git("rev-parse", "HEAD", cwd=cwd).strip()


def _split_diff(case: Case, work: Path, old: str, new: str) -> tuple[str, str]:
    """(reference patch, hidden tests): the diff from `old` to `new`, its
    non-test files and its test files apart."""
    names = git("diff", "--name-only", "-z", old, new, cwd=work).split("\0")
    names = [name for name in names if name]
    tests = [name for name in names if case.is_test_file(name)]
    code = [name for name in names if not case.is_test_file(name)]

    def diff(paths: list[str]) -> str:
        if not paths:
            return ""
        return git("diff", "--binary", "--no-renames", old, new, "--", *paths, cwd=work)

    return diff(code), diff(tests)


def _files_after(
    work: Path, base: str, patch: str, case: Case
) -> dict[str, str | None]:
    """The files `patch` changes, as they are after it (None: deleted)."""
    if not patch.strip():
        return {}
    git("checkout", "--quiet", "--detach", base, cwd=work)
    _apply(patch, work, "reference patch", case)
    status = git("status", "--porcelain", "-z", "--untracked-files=all", cwd=work)
    files: dict[str, str | None] = {}
    for entry in status.split("\0"):
        if len(entry) < 4:
            continue
        path = entry[3:]
        target = work / path
        if not target.exists():
            files[path] = None
            continue
        try:
            files[path] = target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise SourceError(
                f"{case.path}: the reference patch writes a binary file ({path}); "
                "the scripted developer writes text only"
            ) from None
    git("reset", "--quiet", "--hard", cwd=work)
    git("clean", "--quiet", "-fdx", cwd=work)
    return files


def prepare(case: Case, root: Path, cache: Path) -> Prepared:
    """The case's bare repository under `root` (made afresh) and what goes
    with it (module docstring)."""
    root.mkdir(parents=True, exist_ok=True)
    bare = root / f"{case.id}.git"
    if bare.exists():
        shutil.rmtree(bare)
    with tempfile.TemporaryDirectory(prefix="codex-eval-source-") as scratch:
        tree = pristine_tree(case, cache, Path(scratch))
        work = Path(scratch) / "work"
        shutil.copytree(tree, work, symlinks=False)
        git("init", "--quiet", "-b", "pristine", cwd=work)
        pristine = _commit(work, "pristine")
        _apply(case.break_patch, work, "break", case)
        broken = _commit(work, "broken")
        patch, test_patch = case.patch, case.test_patch
        if case.break_patch and not (patch or test_patch):
            patch, test_patch = _split_diff(case, work, broken, pristine)
        # The base alone, as a root commit: the release is not in its history.
        tree_sha = git("rev-parse", f"{broken}^{{tree}}", cwd=work).strip()
        base = git(
            "-c",
            "commit.gpgsign=false",
            "commit-tree",
            tree_sha,
            "-m",
            f"{BASE_MESSAGE}: {case.project} ({case.source.describe()})",
            cwd=work,
        ).strip()
        git("branch", "--quiet", "-f", "main", base, cwd=work)
        gold = _files_after(work, base, patch, case)
        _check_tests_apply(work, base, test_patch, case)
        # file:// makes git send only what main reaches.
        git(
            "clone",
            "--quiet",
            "--bare",
            "--single-branch",
            "--branch",
            "main",
            f"file://{work}",
            str(bare),
            cwd=root,
        )
    return Prepared(case, bare, base, patch, test_patch, gold)


def _check_tests_apply(work: Path, base: str, test_patch: str, case: Case) -> None:
    """The hidden tests must apply to the base (the judge applies them)."""
    if not test_patch.strip():
        return
    git("checkout", "--quiet", "--detach", base, cwd=work)
    _apply(test_patch, work, "test_patch", case)
    git("reset", "--quiet", "--hard", cwd=work)
    git("clean", "--quiet", "-fdx", cwd=work)
