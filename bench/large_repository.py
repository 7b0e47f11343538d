"""A generated repository of many files, for the figures of the repository map
and of search (bench/repo_map.py).

The mix stands for an ordinary large monorepo: Python, JavaScript, Go and a
little TypeScript and Rust in nested packages, every module calling functions
of others (a few modules are called from hundreds of files, most from a
handful), plus Markdown, JSON and text files, a vendored Go folder and a
minified bundle. Contents are made from a seeded generator, so a repository of
n files is the same on every machine. It is written with one `git fast-import`
(two commits) and checked out once, then kept under var/bench/repositories/ and
reused; a marker beside it holds its head commit.

With `commits` above two, a history follows the first commit (the figures of
git steps, bench/git_steps.py): each later commit changes one to three files of
a pool of one file in fifty, as a long-lived project's commits do. Such a
repository can also be kept bare (`bare=True`): a forge's copy, never checked
out.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import GIT_ENV, ROOT

# Bump when the generated content changes: a kept copy is then made again.
VERSION = 1
# Shares of the files by kind (the rest are text files).
SHARES = {"py": 0.36, "js": 0.18, "go": 0.12, "ts": 0.06, "rs": 0.04}
PER_FOLDER = 40
VERBS = (  # noqa: SIM905 - words read better as a sentence
    "load save parse render build check fetch merge send split score sync "
    "index flush apply resolve encode decode collect filter"
).split()
NOUNS = (  # noqa: SIM905 - words read better as a sentence
    "user order invoice token record session page report queue cache event "
    "batch account ledger price stock route label metric schema"
).split()
AREAS = (  # noqa: SIM905 - words read better as a sentence
    "billing search catalog checkout identity ledger shipping analytics "
    "inventory notify pricing reports storage support gateway"
).split()
WORDS = (  # noqa: SIM905 - words read better as a sentence
    "the a service returns when each request is kept for later and its "
    "result goes to caller who reads value from store with retries after "
    "timeout unless configured otherwise so that nothing"
).split()
EPOCH = 1_700_000_000


@dataclass(frozen=True)
class Module:
    """One generated source file: its language, index among that language's
    files and the folder it lives in."""

    kind: str
    index: int
    folder: str

    @property
    def noun(self) -> str:
        return NOUNS[self.index % len(NOUNS)]

    def function(self, n: int) -> str:
        """The name of this module's n-th function (unique per language)."""
        verb = VERBS[(self.index + n * 7) % len(VERBS)]
        if self.kind == "go":  # exported, so other packages may call it
            return f"{verb.title()}{self.noun.title()}{self.index}x{n}"
        if self.kind in ("ts", "js"):
            return f"{verb}{self.noun.title()}{self.index}x{n}"
        return f"{verb}_{self.noun}_{self.index}_{n}"

    @property
    def type_name(self) -> str:
        return f"{self.noun.title()}Service{self.index}"

    @property
    def stem(self) -> str:
        return f"{self.noun}_{self.index}"

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.stem}.{self.kind}"


def layout(files: int) -> tuple[dict[str, list[Module]], list[str]]:
    """The source modules per language and the text files' paths, `files` in
    all, in nested folders of about PER_FOLDER files."""
    modules: dict[str, list[Module]] = {}
    for kind, share in SHARES.items():
        count = int(files * share)
        modules[kind] = [
            Module(kind, i, _folder(kind, i // PER_FOLDER)) for i in range(count)
        ]
    # Two of the text files' share go to the vendored file and the bundle.
    texts = files - sum(len(m) for m in modules.values()) - 2
    text_paths = []
    for i in range(texts):
        folder = _folder("docs", i // PER_FOLDER)
        suffix = ("md", "md", "md", "json", "txt")[i % 5]
        text_paths.append(f"{folder}/note_{i}.{suffix}")
    return modules, text_paths


def _folder(kind: str, n: int) -> str:
    top = {"py": "python", "js": "web", "ts": "web-ts", "go": "go", "rs": "rust"}
    area = AREAS[n % len(AREAS)]
    return f"{top.get(kind, kind)}/{area}/pkg{n // len(AREAS) % 40}/part{n}"


def targets(rng: random.Random, pool: list[Module], me: Module) -> list[Module]:
    """The modules `me` calls: skewed towards the first ones, so a few are
    called from very many files and most from few."""
    chosen = []
    for _ in range(rng.randint(2, 7)):
        other = pool[int(len(pool) * rng.random() ** 3)]
        if other is not me and other not in chosen:
            chosen.append(other)
    return chosen


def _statements(rng: random.Random, calls: list[str], indent: str, kind: str) -> str:
    """A few lines of a function's body, some of them calls to `calls`."""
    declare = {"py": "", "go": "", "rs": "let ", "js": "const ", "ts": "const "}[kind]
    assign = " := " if kind == "go" else " = "
    end = ";" if kind in ("rs", "js", "ts") else ""
    lines = []
    for n in range(rng.randint(1, 9)):
        word = f'"{rng.choice(WORDS)}"'
        if calls and rng.random() < 0.45:
            value = f"{rng.choice(calls)}({word})"
        else:
            value = f"len({word}) * {rng.randint(1, 99)}"
        lines.append(f"{indent}{declare}value{n}{assign}{value}{end}")
    return "\n".join(lines)


def python(m: Module, rng: random.Random, others: list[Module]) -> str:
    head = [f'"""The {m.noun} helpers of part {m.index}."""', ""]
    calls = []
    for other in others:
        name = other.function(rng.randint(0, 2))
        module = other.path[:-3].replace("/", ".")
        head.append(f"from {module} import {name}")
        calls.append(name)
    body = ["", ""]
    body.append(f"class {m.type_name}:")
    body.append(f'    """Keeps the {m.noun}s of one caller."""')
    for method in ("__init__", "run", "close", f"refresh_{m.noun}"):
        args = "self, source" if method == "__init__" else "self"
        body.append(f"\n    def {method}({args}):")
        body.append(_statements(rng, calls, " " * 8, "py"))
        body.append("        return None")
    for n in range(3):
        body.append(f"\n\ndef {m.function(n)}(item, *, limit: int = {n + 10}) -> int:")
        body.append(f'    """{" ".join(rng.choices(WORDS, k=8))}."""')
        body.append(_statements(rng, calls, "    ", "py"))
        body.append("    return limit")
    return "\n".join(head + body) + "\n"


def javascript(m: Module, rng: random.Random, others: list[Module]) -> str:
    head, calls = [f"// The {m.noun} helpers of part {m.index}.", ""], []
    for other in others:
        name = other.function(rng.randint(0, 2))
        head.append(f'import {{ {name} }} from "/{other.path}";')
        calls.append(name)
    body = ["", f"export class {m.type_name} {{"]
    for method in ("constructor", "run", "close", f"refresh{m.noun.title()}"):
        body.append(f"  {method}(source) {{")
        body.append(_statements(rng, calls, "    ", m.kind))
        body.append("  }")
    body.append("}")
    for n in range(3):
        typed = ": number" if m.kind == "ts" else ""
        body.append(f"\nexport function {m.function(n)}(item, limit{typed}) {{")
        body.append(_statements(rng, calls, "  ", m.kind))
        body.append("  return limit;\n}")
    if m.kind == "ts":
        body.append(f"\nexport interface {m.type_name}Options {{ limit: number }}")
    return "\n".join(head + body) + "\n"


def golang(m: Module, rng: random.Random, others: list[Module]) -> str:
    package = m.folder.rsplit("/", 1)[-1]
    head = [f"// Package {package} keeps the {m.noun} helpers.", f"package {package}"]
    calls, imports = [], []
    for other in others:
        if other.folder == m.folder:
            continue
        alias = f"p{other.index}"
        imports.append(f'\t{alias} "example.com/big/{other.folder}"')
        calls.append(f"{alias}.{other.function(rng.randint(0, 2))}")
    if imports:
        head += ["", "import (", *imports, ")"]
    body = ["", f"type {m.type_name} struct {{\n\tLimit int\n}}"]
    for method in ("Run", "Close", f"Refresh{m.noun.title()}"):
        body.append(f"\nfunc (s *{m.type_name}) {method}(source string) error {{")
        body.append(_statements(rng, calls, "\t", "go"))
        body.append("\treturn nil\n}")
    for n in range(3):
        body.append(f"\nfunc {m.function(n)}(item string, limit int) int {{")
        body.append(_statements(rng, calls, "\t", "go"))
        body.append("\treturn limit\n}")
    return "\n".join(head + body) + "\n"


def rust(m: Module, rng: random.Random, others: list[Module]) -> str:
    calls = [f"crate::m{o.index}::{o.function(rng.randint(0, 2))}" for o in others]
    body = [f"//! The {m.noun} helpers of part {m.index}.", ""]
    body.append(f"pub struct {m.type_name} {{\n    pub limit: usize,\n}}")
    body.append(f"\nimpl {m.type_name} {{")
    for method in ("run", "close"):
        body.append(f"    pub fn {method}(&self, source: &str) -> usize {{")
        body.append(_statements(rng, calls, " " * 8, "rs"))
        body.append("        self.limit\n    }")
    body.append("}")
    for n in range(3):
        body.append(f"\npub fn {m.function(n)}(item: &str, limit: usize) -> usize {{")
        body.append(_statements(rng, calls, "    ", "rs"))
        body.append("    limit\n}")
    return "\n".join(body) + "\n"


WRITERS = {"py": python, "js": javascript, "ts": javascript, "go": golang}
WRITERS["rs"] = rust


def text(path: str, rng: random.Random, names: list[str]) -> str:
    if path.endswith(".json"):
        keys = rng.sample(WORDS, 6)
        return (
            "{\n"
            + ",\n".join(f'  "{k}": {rng.randint(0, 999)}' for k in keys)
            + "\n}\n"
        )
    lines = [f"# {rng.choice(NOUNS).title()} notes", ""]
    for _ in range(rng.randint(2, 8)):
        words = rng.choices(WORDS, k=rng.randint(20, 60))
        words[rng.randrange(len(words))] = f"`{rng.choice(names)}`"
        lines += [" ".join(words) + ".", ""]
    return "\n".join(lines)


def contents(files: int):
    """(path, bytes) of every file of the first commit, in a fixed order."""
    rng = random.Random(f"codex-bench-{files}-{VERSION}")
    modules, text_paths = layout(files)
    for kind, pool in modules.items():
        for m in pool:
            others = targets(rng, pool, m)
            yield m.path, WRITERS[kind](m, rng, others).encode()
    names = [m.function(0) for pool in modules.values() for m in pool[:200]]
    for path in text_paths:
        yield path, text(path, rng, names).encode()
    # What a real tree also holds and a map should skip.
    yield "go/vendor/example.org/lib/lib.go", b"package lib\n\nfunc Vendored() {}\n"
    yield "web/dist/app.min.js", b"function a(){return 1}" * 4000 + b"\n"


def _commit(message: str, when: int) -> bytes:
    who = f"Codex bench <bench@localhost> {when} +0000"
    message_bytes = message.encode()
    return (
        f"commit refs/heads/main\nauthor {who}\ncommitter {who}\n"
        f"data {len(message_bytes)}\n".encode()
        + message_bytes
        + b"\n"
    )


# One file in HISTORY_POOL is changed by the commits of a longer history.
HISTORY_POOL = 50


def _modify(path: str, data: bytes) -> bytes:
    return b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)


def fast_import_stream(files: int, commits: int = 2):
    """The `git fast-import` input: the whole tree, then a second commit that
    changes one file in a hundred (some history to carry); with `commits`
    above two, instead, `commits - 1` commits that each change one to three
    files of the history's pool (HISTORY_POOL)."""
    if commits < 2:
        raise ValueError("a generated repository has at least two commits")
    yield _commit(f"A generated repository of {files} files", EPOCH)
    changed, pool = [], []
    for n, (path, data) in enumerate(contents(files)):
        yield _modify(path, data)
        if n % 100 == 7:
            changed.append((path, data))
        # Source files only: a line added to a JSON file would break it.
        if n % HISTORY_POOL == 3 and not path.endswith((".json", ".min.js")):
            pool.append([path, data])
    if commits == 2:
        yield b"\n" + _commit("Touch one file in a hundred", EPOCH + 3600)
        for path, data in changed:
            data += b"\n# touched\n" if path.endswith(".py") else b"\n// touched\n"
            yield _modify(path, data)
        yield b"\n"
        return
    yield from _history(pool, commits - 1, random.Random(f"codex-history-{files}"))


def _history(pool: list[list], count: int, rng: random.Random):
    """`count` commits, each adding a line to one to three files of `pool`
    ([path, contents] pairs, updated in place), an hour apart."""
    for number in range(1, count + 1):
        picked = {rng.randrange(len(pool)) for _ in range(rng.randint(1, 3))}
        names = ", ".join(pool[i][0].rsplit("/", 1)[-1] for i in sorted(picked))
        yield b"\n" + _commit(f"Change {names} ({number})", EPOCH + 3600 * number)
        for i in sorted(picked):
            path, data = pool[i]
            mark = b"#" if path.endswith((".py", ".md", ".txt")) else b"//"
            data += b"%s change %d\n" % (mark, number)
            pool[i][1] = data
            yield _modify(path, data)
    yield b"\n"


def git(*args: str, cwd: Path, check: bool = True) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        check=check,
        capture_output=True,
        text=True,
    ).stdout


def repository(
    files: int, root: Path | None = None, *, commits: int = 2, bare: bool = False
) -> Path:
    """The worktree of the generated repository of `files` files and `commits`
    commits, at its head commit and clean (with `bare`, a bare repository
    whose main is that commit); made (in well under a minute for 100,000
    files and two commits) unless a copy of this VERSION is kept under `root`
    (var/bench/repositories)."""
    root = root or ROOT / "var" / "bench" / "repositories"
    name = f"files-{files}" + (f"-commits-{commits}" if commits != 2 else "")
    target = root / f"{name}-v{VERSION}{'.git' if bare else ''}"
    marker = root / f"{name}-v{VERSION}{'-bare' if bare else ''}.head"
    if target.is_dir() and marker.is_file():
        head = marker.read_text().strip()
        if bare:
            git("update-ref", "refs/heads/main", head, cwd=target)
        else:
            restore(target, head)
        return target
    root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(target, ignore_errors=True)
    building = root / f".building-{name}-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir()
    try:
        git(
            "init", "--quiet", *(["--bare"] if bare else []), "-b", "main", cwd=building
        )
        process = subprocess.Popen(
            ["git", "-c", "core.compression=1", "fast-import", "--quiet"],
            cwd=building,
            env={**os.environ, **GIT_ENV},
            stdin=subprocess.PIPE,
        )
        assert process.stdin is not None
        with process.stdin:
            for chunk in fast_import_stream(files, commits):
                process.stdin.write(chunk)
        if process.wait() != 0:
            raise RuntimeError(f"git fast-import exited {process.returncode}")
        if not bare:
            git("reset", "--hard", "--quiet", "main", cwd=building)
        head = git("rev-parse", "main", cwd=building).strip()
        os.rename(building, target)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    marker.write_text(head + "\n")
    return target


def restore(worktree: Path, head: str) -> None:
    """Put a kept repository back at `head`, clean (a run stopped half-way
    through a figure may have left a commit or a file behind)."""
    if git("rev-parse", "HEAD", cwd=worktree).strip() != head or git(
        "status", "--porcelain", "--untracked-files=all", cwd=worktree
    ):
        git("checkout", "--quiet", "-B", "main", head, cwd=worktree)
        git("reset", "--hard", "--quiet", head, cwd=worktree)
        git("clean", "-fdxq", cwd=worktree)


if __name__ == "__main__":
    import sys

    # python -m bench.large_repository [files] [commits] [--bare]
    numbers = [int(arg) for arg in sys.argv[1:] if not arg.startswith("-")]
    count = numbers[0] if numbers else 100_000
    history = numbers[1] if len(numbers) > 1 else 2
    started = time.perf_counter()
    path = repository(count, commits=history, bare="--bare" in sys.argv)
    print(f"{path} in {time.perf_counter() - started:.1f} s")
    with contextlib.suppress(Exception):
        print(git("count-objects", "-vH", cwd=path))
