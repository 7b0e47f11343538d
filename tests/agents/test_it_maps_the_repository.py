"""The repository map (agents/repo_map): the classes, functions and methods of
each file with their signatures, one line each, the most referenced first,
within a token budget; the files in focus first."""

from __future__ import annotations

import pytest

from agents.repo_map import build, repository_map
from tests.agents.git_repositories import make_repository

SOURCES = {
    "greet.py": '''"""Greetings."""
from util import helper


class Greeter(Base):
    """Greets."""

    def __init__(self, name: str,
                 loud: bool = False) -> None:
        def inner():
            pass
        self.name = helper(name)

    @property
    def shout(self) -> str:
        return self.name.upper()


def main(argv: list[str] | None = None) -> int:
    # A comment before the body is no part of the signature.
    class Local:
        pass
    return 0
''',
    "web/greet.js": """import { helper } from "./util.js";
export class Greeter extends Base {
  constructor(name) { this.name = helper(name); }
  async shout(loud) { return this.name.toUpperCase(); }
}
export function main(argv) { const inner = () => 1; return inner(); }
export const run = async (x, y) => { return main(x); };
""",
    "web/types.ts": """interface Options { loud: boolean; shout(x: number): string }
export class Greeter implements Options {
  loud = false;
  shout(x: number): string { return "hi"; }
}
export function main(argv: string[]): number { return 0; }
type Alias = Greeter | null;
enum Color { Red, Green }
""",
    "greet/greet.go": """package greet

// Greeter greets.
type Greeter struct {
\tName string
}

func (g *Greeter) Shout(loud bool) string {
\tinner := func() int { return 1 }
\t_ = inner
\treturn g.Name
}

func Main(argv []string) int {
\treturn 0
}
""",
    "src/lib.rs": """pub struct Greeter { name: String }
pub trait Shout { fn shout(&self) -> String; }
impl Shout for Greeter {
    fn shout(&self) -> String { self.name.to_uppercase() }
}
pub fn main() { fn inner() {} }
""",
}

EXPECTED = {
    "greet.py": [
        "     5 class Greeter(Base)",
        "     8   def __init__(self, name: str, loud: bool = False) -> None",
        "    15   def shout(self) -> str",
        "    19 def main(argv: list[str] | None = None) -> int",
    ],
    "web/greet.js": [
        "     2 class Greeter extends Base",
        "     3   constructor(name)",
        "     4   async shout(loud)",
        "     6 function main(argv)",
        "     7 const run = async (x, y) =>",
    ],
    "web/types.ts": [
        "     1 interface Options",
        "     1   shout(x: number): string",
        "     2 class Greeter implements Options",
        "     4   shout(x: number): string",
        "     6 function main(argv: string[]): number",
        "     7 type Alias = Greeter | null",
        "     8 enum Color",
    ],
    "greet/greet.go": [
        "     4 type Greeter struct",
        "     8 func (g *Greeter) Shout(loud bool) string",
        "    14 func Main(argv []string) int",
    ],
    "src/lib.rs": [
        "     1 pub struct Greeter",
        "     2 pub trait Shout",
        "     2   fn shout(&self) -> String",
        "     3 impl Shout for Greeter",
        "     4   fn shout(&self) -> String",
        "     6 pub fn main()",
    ],
}


def sections(text: str) -> dict[str, list[str]]:
    """The map as {path: its lines}."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            current = found.setdefault(line[:-1], [])
        else:
            current.append(line)
    return found


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "cache"


def test_it_lists_the_outline_of_each_language_one_line_each(tmp_path, cache):
    repo, sha = make_repository(tmp_path / "repo", SOURCES)
    text = repository_map(repo, commit=sha, budget_tokens=2000, cache_dir=cache)
    found = sections(text)
    for path, lines in EXPECTED.items():
        assert found[path] == lines, path
    # Helpers defined inside functions are not part of the outline.
    assert "inner" not in text and "Local" not in text


def test_it_ranks_what_many_files_use_before_what_none_uses(tmp_path, cache):
    files = {
        "lib.py": "def lonely():\n    pass\n\n\ndef popular():\n    pass\n",
        "aaa.py": "def spare():\n    pass\n",
    }
    for n in range(6):
        files[f"use_{n}.py"] = f"from lib import popular\n\n\ndef user_{n}():\n"
        files[f"use_{n}.py"] += "    return popular()\n"
    repo, sha = make_repository(tmp_path / "repo", files)
    text = repository_map(repo, commit=sha, budget_tokens=2000, cache_dir=cache)
    # Files come in the order of their best definition, whatever their names;
    # within a file, definitions keep their order in the source.
    assert text.startswith("lib.py:\n     1 def lonely()\n     5 def popular()\n")
    assert text.index("def popular()") < text.index("def spare()")
    # With room for one definition, it is the one the others use.
    small = repository_map(repo, commit=sha, budget_tokens=10, cache_dir=cache)
    assert small == "lib.py:\n     5 def popular()\n"


def test_a_long_compound_name_outranks_a_short_generic_one(tmp_path, cache):
    # `get` may be anyone's `get`; `compute_totals` is surely this one.
    files = {
        "generic.py": "def get():\n    pass\n",
        "specific.py": "def compute_totals():\n    pass\n",
        "one.py": "def one():\n    compute_totals()\n",
    }
    for n in range(4):
        files[f"use_{n}.py"] = f"def user_{n}(d):\n    d.get()\n"
    repo, sha = make_repository(tmp_path / "repo", files)
    text = repository_map(repo, commit=sha, budget_tokens=2000, cache_dir=cache)
    assert text.index("def compute_totals()") < text.index("def get()")


def test_it_puts_the_files_in_focus_and_what_they_use_first(tmp_path, cache):
    files = {
        "common.py": "def everywhere():\n    pass\n",
        "rare.py": "def seldom():\n    pass\n",
        "focus/task.py": "from rare import seldom\n\n\ndef task():\n    seldom()\n",
    }
    for n in range(4):
        files[f"use_{n}.py"] = f"def user_{n}():\n    everywhere()\n"
    repo, sha = make_repository(tmp_path / "repo", files)
    plain = repository_map(repo, commit=sha, budget_tokens=2000, cache_dir=cache)
    assert plain.index("def everywhere()") < plain.index("def seldom()")
    focused = repository_map(
        repo, commit=sha, budget_tokens=2000, focus=["task.py"], cache_dir=cache
    )
    assert focused.startswith("focus/task.py:\n     4 def task()\n")
    assert focused.index("def seldom()") < focused.index("def everywhere()")
    # A folder names every file under it.
    by_folder = repository_map(
        repo, commit=sha, budget_tokens=2000, focus=["focus/"], cache_dir=cache
    )
    assert by_folder.startswith("focus/task.py:")


@pytest.mark.parametrize("budget", [5, 40, 120, 400])
def test_the_map_keeps_to_its_budget(tmp_path, cache, budget):
    files = {}
    for n in range(60):
        calls = "\n".join(f"    helper_{m}_0()" for m in range(n % 7))
        files[f"pkg/module_{n}.py"] = (
            f"class Thing{n}:\n    def method_{n}(self, a, b) -> int:\n"
            f"        return a\n\n\ndef helper_{n}_0(x: int = {n}) -> int:\n"
            f"{calls or '    pass'}\n"
        )
    repo, sha = make_repository(tmp_path / "repo", files)
    text = repository_map(repo, commit=sha, budget_tokens=budget, cache_dir=cache)
    assert len(text) <= budget * 4
    if budget >= 40:
        assert text.count("\n") >= 3
    bigger = repository_map(repo, commit=sha, budget_tokens=budget * 2, cache_dir=cache)
    assert len(bigger) > len(text)


def test_a_budget_of_zero_leaves_the_map_out(tmp_path, cache):
    repo, sha = make_repository(tmp_path / "repo", {"a.py": "def f():\n    pass\n"})
    assert repository_map(repo, commit=sha, budget_tokens=0, cache_dir=cache) == ""
    assert not cache.exists()


def test_it_takes_a_revision_and_leaves_other_files_out(tmp_path, cache):
    repo, sha = make_repository(
        tmp_path / "repo",
        {
            "a.py": "def kept():\n    pass\n",
            "notes.md": "def not_code():\n",
            "node_modules/dep/index.js": "function vendored() {}\n",
            "static/app.min.js": "function minified() {}\n",
            "gen/api_pb2.py": "def generated():\n    pass\n",
            "gen/models.go": "// Code generated by tool. DO NOT EDIT.\n"
            "package gen\n\nfunc Made() {}\n",
        },
    )
    built = build(repo, commit="HEAD", budget_tokens=2000, cache_dir=cache)
    assert built.commit == sha
    assert built.text == "a.py:\n     1 def kept()\n"


def test_a_map_that_cannot_be_made_is_empty(tmp_path, cache):
    (tmp_path / "plain").mkdir()
    text = repository_map(
        tmp_path / "plain", commit="HEAD", budget_tokens=100, cache_dir=cache
    )
    assert text == ""
