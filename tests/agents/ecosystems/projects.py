"""Small real projects of each ecosystem, made in temporary folders, and the
worktrees the phase runner makes of them (a bare remote, its mirror, one
worktree per task on its own branch)."""

from __future__ import annotations

import json
from pathlib import Path

from integrations.git import add_worktree, ensure_mirror
from integrations.git.runner import run_git
from tests.integrations.git.helpers import IDENTITY

PYTEST_PROJECT = {
    "pyproject.toml": (
        '[project]\nname = "calc"\nversion = "0.1"\n'
        '[project.optional-dependencies]\ntest = ["pytest>=7"]\ndocs = ["sphinx"]\n'
        "[tool.pytest.ini_options]\ntestpaths = ['tests']\n"
    ),
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n"
    "    assert add(1, 2) == 3\n",
}

UNITTEST_PROJECT = {
    "requirements.txt": "# nothing to install\n",
    "shapes.py": "def area(w, h):\n    return w * h\n",
    "tests/__init__.py": "",
    "tests/test_shapes.py": (
        "import unittest\n\nfrom shapes import area\n\n\n"
        "class AreaTest(unittest.TestCase):\n"
        "    def test_area(self):\n        self.assertEqual(area(2, 3), 6)\n"
    ),
}


def node_project(test: str = "node --test") -> dict[str, str]:
    """A JavaScript project with package-lock.json and one dependency that
    is a local folder: `npm ci` installs it with no network."""
    package = {
        "name": "greeter",
        "version": "1.0.0",
        "scripts": {"test": test},
        "dependencies": {"helper": "file:./helper"},
    }
    lock = {
        "name": "greeter",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": {
                "name": "greeter",
                "version": "1.0.0",
                "dependencies": {"helper": "file:./helper"},
            },
            "helper": {"version": "1.0.0"},
            "node_modules/helper": {"resolved": "helper", "link": True},
        },
    }
    return {
        "package.json": json.dumps(package, indent=2),
        "package-lock.json": json.dumps(lock, indent=2),
        "helper/package.json": '{"name": "helper", "version": "1.0.0"}',
        "helper/index.js": "module.exports = (name) => `hello ${name}`;\n",
        "greet.js": "const h = require('helper');\nmodule.exports = h;\n",
        "greet.test.js": (
            "const test = require('node:test');\n"
            "const assert = require('node:assert');\n"
            "const greet = require('./greet');\n"
            "test('greets', () => assert.strictEqual(greet('x'), 'hello x'));\n"
        ),
    }


GO_PROJECT = {
    "go.mod": (
        "module example.com/calc\n\ngo 1.21\n\nrequire golang.org/x/text v0.14.0\n"
    ),
    "go.sum": "golang.org/x/text v0.14.0 h1:abc=\n",
    "calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
    "calc_test.go": (
        'package calc\n\nimport "testing"\n\n'
        "func TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal()\n\t}\n}\n"
    ),
}

RUST_PROJECT = {
    "Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": (
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n"
        "#[cfg(test)]\nmod tests {\n    #[test]\n"
        "    fn adds() { assert_eq!(super::add(1, 2), 3); }\n}\n"
    ),
}


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def commit(repo: Path, message: str = "change") -> str:
    run_git(["add", "-A"], repo)
    run_git(
        ["-c", "commit.gpgsign=false", "commit", "--quiet", "-m", message],
        repo,
        IDENTITY,
    )
    return run_git(["rev-parse", "HEAD"], repo).strip()


def project(folder: Path, files: dict[str, str]) -> Path:
    """A git repository at `folder` whose one commit holds `files`."""
    folder.mkdir(parents=True)
    run_git(["init", "--quiet", "--initial-branch=main", str(folder)], folder.parent)
    write(folder, files)
    commit(folder, "initial commit")
    return folder


class Remote:
    """A bare remote holding `files` on main, its mirror, and task worktrees
    made from it the way the phase runner makes them."""

    def __init__(self, root: Path, repository, files: dict[str, str]) -> None:
        self.root = root
        self.bare = root / "remote.git"
        run_git(
            ["init", "--bare", "--quiet", "--initial-branch=main", str(self.bare)], root
        )
        self.seed = project(root / "seed", files)
        run_git(["remote", "add", "origin", str(self.bare)], self.seed)
        self.push()
        self.repository = repository
        self.mirror = ensure_mirror(repository, f"file://{self.bare}")

    def push(self, branch: str = "main") -> None:
        run_git(["push", "--quiet", "origin", f"HEAD:refs/heads/{branch}"], self.seed)

    def change(self, files: dict[str, str], branch: str = "main") -> None:
        """Commit `files` on top of main and push them to `branch`."""
        write(self.seed, files)
        commit(self.seed)
        self.push(branch)
        ensure_mirror(self.repository, f"file://{self.bare}")

    def worktree(self, task_id: str, base: str = "main") -> Path:
        return add_worktree(
            self.mirror, self.root / "worktrees" / task_id, f"codex/{task_id}", base
        )
