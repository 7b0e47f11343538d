"""Processes of a checkout of one's own: `make run`'s state in a folder of the
test (CODEX_VAR_DIR), with neither PostgreSQL nor Redis of the test run, and
a small JavaScript case folder made outside the repository (node's own test
runner, no toolchain to download)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FIGURES = (
    "from codex.tasks.pages.dashboard import build\n"
    "b = build()\n"
    "print(json.dumps({'tasks': b.total_tasks, 'completed': b.completed_tasks, "
    "'success': b.success_rate, 'cost': str(b.total_cost), "
    "'merged': b.merged_pull_requests, 'runs': b.total_runs}))"
)
JS = {
    "index.js": "'use strict';\n\nfunction add(a, b) {\n  return a + b;\n}\n\n"
    "function mul(a, b) {\n  return a * b;\n}\n\nmodule.exports = { add, mul };\n",
    "test/mini.test.js": "'use strict';\nconst test = require('node:test');\n"
    "const assert = require('node:assert');\nconst { add, mul } = require('..');\n\n"
    "test('adds', () => {\n  assert.strictEqual(add(2, 3), 5);\n});\n\n"
    "test('multiplies', () => {\n  assert.strictEqual(mul(2, 3), 6);\n});\n",
}


def environment(var: Path) -> dict[str, str]:
    """A process as `make run` would start it on this checkout, its state in
    `var`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "CODEX_OWN_STATE")
        and not key.startswith("PYTEST")
    }
    env["CODEX_VAR_DIR"] = str(var)
    env["DJANGO_SETTINGS_MODULE"] = "codex.settings"
    return env


def run(argv: list[str], var: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env=environment(var),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def figures(var: Path) -> dict:
    """The dashboard's figures, as `make run`'s console shows them."""
    done = run(["manage.py", "shell", "-c", "import json\n" + FIGURES], var)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def js_case_folder(folder: Path) -> Path:
    """A suite of one case: mini in JavaScript, mul and its test removed."""
    from tests.agents.evaluation.conftest import diff

    project = folder / "jsmini"
    for path, text in JS.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text)
    broken = {
        "index.js": "'use strict';\n\nfunction add(a, b) {\n  return a + b;\n}\n\n"
        "module.exports = { add };\n",
        "test/mini.test.js": JS["test/mini.test.js"]
        .replace("const { add, mul }", "const { add }")
        .replace(
            "\ntest('multiplies', () => {\n  assert.strictEqual(mul(2, 3), 6);\n});\n",
            "",
        ),
    }
    command = (
        "node --test --test-reporter=junit --test-reporter-destination={junit_xml} "
        "test/"
    )
    (folder / "js-mul.toml").write_text(
        f"""language = "javascript"
project = "jsmini"
break = '''
{diff(JS, broken)}'''

[source]
directory = "jsmini"

[request]
title = "Add mul(a, b)"
description = "jsmini can add but not multiply: export mul(a, b) too."

[tests]
command = "{command}"
fail_to_pass = ["test::multiplies"]
pass_to_pass = ["test::adds"]
"""
    )
    return folder
