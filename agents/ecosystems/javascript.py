"""JavaScript and TypeScript projects: package.json, installed by the
package manager its lock file names, tested by its `test` script.

The setup is `npm ci`, `pnpm install --frozen-lockfile` or `yarn install`
with the lock file it matches, and only when that tool is installed where
commands run (a note says so otherwise). The test command is `npm test`,
with JUnit reporter arguments added only when the script is one plain call
of a runner that takes them (node --test, vitest; jest and mocha when their
JUnit reporter is among the dev dependencies); no script: `node --test`.
Nothing of the script is ever spliced into a command: it is only classified.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agents.ecosystems.model import Ecosystem, Which
from agents.ecosystems.tree import Tree

NPM_HOSTS = ("registry.npmjs.org",)
YARN_HOSTS = ("registry.npmjs.org", "registry.yarnpkg.com")
MAX_SCRIPT_CHARS = 1000
NODE_JUNIT = (
    "--test-reporter=spec --test-reporter-destination=stdout "
    "--test-reporter=junit --test-reporter-destination={junit_xml}"
)
# One call of a runner with plain options: no shell operators, no expansion.
PLAIN = r"(?:\s+[A-Za-z0-9_./:=,@-]+)*\s*$"
OPTION = r"\s+--[a-z-]+(?:=[A-Za-z0-9_./:,@-]+)?"
RUNNERS = {
    "node-test": re.compile(rf"^node(?:{OPTION})*\s+--test(?:{OPTION})*\s*$"),
    "vitest": re.compile(r"^vitest(?:\s+run)?" + PLAIN),
    "jest": re.compile(r"^jest" + PLAIN),
    "mocha": re.compile(r"^mocha" + PLAIN),
}
# Any test runner named first, for finding the tests near a change.
RUNNER_NAMES = {
    "node-test": r"^node\b.*\s--test\b",
    "vitest": r"^vitest\b",
    "jest": r"^jest\b",
    "mocha": r"^mocha\b",
}


def package_json(tree: Tree) -> dict[str, Any]:
    text = tree.read("package.json")
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def test_script(package: dict[str, Any]) -> str:
    """The `test` script, "" when there is none (or npm init's placeholder)."""
    scripts = package.get("scripts")
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(script, str) or len(script) > MAX_SCRIPT_CHARS:
        return ""
    if "no test specified" in script:
        return ""
    return script.strip()


def runner_of(script: str) -> str:
    """Which runner a test script calls: node-test, vitest, jest, mocha, or
    "script" (anything else)."""
    for name, pattern in RUNNER_NAMES.items():
        if re.search(pattern, script):
            return name
    return "script"


def _dev_dependencies(package: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for key in ("dependencies", "devDependencies"):
        table = package.get(key)
        if isinstance(table, dict):
            names |= {str(name) for name in table}
    return names


def _test_command(package: dict[str, Any]) -> tuple[str, str]:
    """(test command, runner)."""
    script = test_script(package)
    if not script:
        return f"node --test {NODE_JUNIT}", "node-test"
    plain = next((n for n, p in RUNNERS.items() if p.match(script)), "")
    dev = _dev_dependencies(package)
    if plain == "node-test":
        return f"npm test -- {NODE_JUNIT}", plain
    if plain == "vitest":
        return (
            "npm test -- --reporter=default --reporter=junit "
            "--outputFile.junit={junit_xml}",
            plain,
        )
    if plain == "jest" and "jest-junit" in dev:
        return (
            "env JEST_JUNIT_OUTPUT_FILE={junit_xml} npm test -- --ci "
            "--reporters=default --reporters=jest-junit",
            plain,
        )
    if plain == "mocha" and "mocha-junit-reporter" in dev:
        return (
            "npm test -- --reporter=mocha-junit-reporter "
            "--reporter-options=mochaFile={junit_xml}",
            plain,
        )
    return "npm test", runner_of(script)


def _has_dependencies(package: dict[str, Any]) -> bool:
    return any(
        isinstance(package.get(key), dict) and package[key]
        for key in ("dependencies", "devDependencies", "optionalDependencies")
    )


def _setup(tree: Tree, which: Which) -> tuple[str, str, tuple[str, ...], str]:
    """(setup command, lock file, hosts, note)."""
    if tree.has("pnpm-lock.yaml"):
        tool, lock, command = "pnpm", "pnpm-lock.yaml", "pnpm install --frozen-lockfile"
        hosts = NPM_HOSTS
    elif tree.has("yarn.lock"):
        tool, lock, hosts = "yarn", "yarn.lock", YARN_HOSTS
        # Yarn 2 and later (a .yarnrc.yml) spell the frozen install differently.
        command = (
            "yarn install --immutable"
            if tree.has(".yarnrc.yml")
            else "yarn install --frozen-lockfile --non-interactive"
        )
    else:
        lock = next(
            (f for f in ("package-lock.json", "npm-shrinkwrap.json") if tree.has(f)),
            "",
        )
        tool, hosts = "npm", NPM_HOSTS
        command = (
            "npm ci --no-audit --no-fund"
            if lock
            else "npm install --no-audit --no-fund --no-package-lock"
        )
    if not which(tool):
        return (
            "",
            lock,
            hosts,
            f"{lock or 'package.json'}: {tool} is not installed where commands "
            "run, so nothing is installed (install it, or set the setup command)",
        )
    return command, lock, hosts, ""


def detect(tree: Tree, which: Which) -> Ecosystem | None:
    """The JavaScript or TypeScript project at the top of `tree`, or None."""
    if not tree.has("package.json"):
        return None
    package = package_json(tree)
    setup, lock, hosts, note = _setup(tree, which)
    if not _has_dependencies(package):
        setup, note = "", ""
    test, runner = _test_command(package)
    typescript = tree.has("tsconfig.json")
    return Ecosystem(
        name="typescript" if typescript else "javascript",
        manifests=("package.json",) + (("tsconfig.json",) if typescript else ()),
        key_files=((lock,) if lock else ()) + ("package.json",),
        setup=setup,
        test=test,
        runner=runner,
        hosts=hosts,
        notes=(note,) if note else (),
    )
