"""Detection on real small projects made in temporary folders: each
ecosystem's setup, test command, registry hosts and cache keys, the lock
file choosing the tool, and a note where that tool is missing."""

from __future__ import annotations

import json

from agents.ecosystems import detect
from tests.agents.ecosystems.projects import (
    GO_PROJECT,
    PYTEST_PROJECT,
    RUST_PROJECT,
    UNITTEST_PROJECT,
    node_project,
    project,
)


def everything(program: str) -> str:
    return f"/usr/bin/{program}"


def nothing(program: str) -> None:
    return None


def only(*programs: str):
    return lambda program: f"/usr/bin/{program}" if program in programs else None


def test_a_pytest_project_gets_a_venv_its_test_extra_and_pytest(tmp_path):
    found = detect(project(tmp_path / "p", PYTEST_PROJECT), which=everything)
    [python] = found.ecosystems
    assert python.name == "python" and python.runner == "pytest"
    assert python.setup == (
        "python3 -m venv .venv && .venv/bin/python -m pip install "
        "--disable-pip-version-check --no-input -e '.[test]' pytest"
    )
    assert "--junitxml={junit_xml}" in found.test_command
    assert found.test_command.startswith("python3 -B -m pytest")
    assert found.hosts == ["files.pythonhosted.org", "pypi.org"]
    assert list(found.key_blobs) == ["pyproject.toml"]


def test_a_unittest_project_is_run_by_unittest_not_pytest(tmp_path):
    found = detect(project(tmp_path / "p", UNITTEST_PROJECT), which=everything)
    [python] = found.ecosystems
    assert python.runner == "unittest"
    assert found.test_command == "python3 -B -m unittest discover -s tests -t ."
    # requirements.txt names nothing pytest needs: only the file is installed.
    assert python.setup.endswith("--no-input -r requirements.txt")
    assert "pytest" not in python.setup


def test_requirement_files_and_tox_say_what_to_install(tmp_path):
    files = {
        "requirements.txt": "requests\n",
        "requirements-dev.txt": "pytest\n",
        "requirements-docs.txt": "sphinx\n",
        "tox.ini": "[testenv]\ndeps =\n    hypothesis>=6\n    -rrequirements.txt\n"
        "commands = pytest {posargs}\n",
        "test_app.py": "def test_x():\n    pass\n",
    }
    found = detect(project(tmp_path / "p", files), which=everything)
    [python] = found.ecosystems
    assert "-r requirements-dev.txt -r requirements.txt" in python.setup
    assert "docs" not in python.setup
    assert python.setup.endswith("'hypothesis>=6' pytest")
    assert set(found.key_blobs) == {
        "tox.ini",
        "requirements-dev.txt",
        "requirements-docs.txt",
        "requirements.txt",
    }


def test_uv_and_poetry_locks_use_their_tool_only_where_it_is_installed(tmp_path):
    files = {
        "pyproject.toml": '[project]\nname = "a"\nversion = "1"\n'
        '[dependency-groups]\ndev = ["pytest"]\n',
        "uv.lock": "version = 1\n",
    }
    folder = project(tmp_path / "p", files)
    [with_uv] = detect(folder, which=everything).ecosystems
    assert "uv sync --frozen" in with_uv.setup
    assert "uv.lock" in with_uv.key_files
    [without] = detect(folder, which=only("python3")).ecosystems
    assert without.setup.startswith("python3 -m venv .venv")
    assert "-e . pytest" in without.setup
    assert "uv is not installed" in without.notes[0]


def test_npm_with_a_lock_file_runs_npm_ci_and_node_test_writes_junit(tmp_path):
    found = detect(project(tmp_path / "p", node_project()), which=everything)
    [js] = found.ecosystems
    assert js.name == "javascript" and js.runner == "node-test"
    assert js.setup == "npm ci --no-audit --no-fund"
    assert found.test_command == (
        "npm test -- --test-reporter=spec --test-reporter-destination=stdout "
        "--test-reporter=junit --test-reporter-destination={junit_xml}"
    )
    assert found.hosts == ["registry.npmjs.org"]
    assert set(found.key_blobs) == {"package-lock.json", "package.json"}


def test_pnpm_and_yarn_locks_choose_their_tool_or_say_it_is_missing(tmp_path):
    files = node_project()
    files.pop("package-lock.json")
    pnpm = project(
        tmp_path / "pnpm", {**files, "pnpm-lock.yaml": "lockfileVersion: 9\n"}
    )
    [found] = detect(pnpm, which=everything).ecosystems
    assert found.setup == "pnpm install --frozen-lockfile"
    [missing] = detect(pnpm, which=only("node", "npm")).ecosystems
    assert missing.setup == ""
    assert "pnpm is not installed" in missing.notes[0]
    yarn = project(tmp_path / "yarn", {**files, "yarn.lock": "# yarn lockfile v1\n"})
    [found] = detect(yarn, which=everything).ecosystems
    assert found.setup == "yarn install --frozen-lockfile --non-interactive"
    assert "registry.yarnpkg.com" in found.hosts


def test_jest_and_vitest_get_junit_reporters_only_when_they_have_them(tmp_path):
    jest = node_project("jest --coverage")
    package = json.loads(jest["package.json"])
    package["devDependencies"] = {"jest": "^29", "jest-junit": "^16"}
    jest["package.json"] = json.dumps(package)
    [found] = detect(project(tmp_path / "jest", jest), which=everything).ecosystems
    assert found.test.startswith("env JEST_JUNIT_OUTPUT_FILE={junit_xml} npm test")
    bare_jest = node_project("jest")
    [found] = detect(project(tmp_path / "j2", bare_jest), which=everything).ecosystems
    assert found.test == "npm test" and found.runner == "jest"
    vitest = {**node_project("vitest run"), "tsconfig.json": "{}"}
    [found] = detect(project(tmp_path / "vitest", vitest), which=everything).ecosystems
    assert found.name == "typescript"
    assert "--outputFile.junit={junit_xml}" in found.test


def test_a_package_without_a_test_script_is_run_by_node_test(tmp_path):
    files = {
        "package.json": json.dumps(
            {
                "name": "x",
                "scripts": {"test": ('echo "Error: no test specified" && exit 1')},
            }
        )
    }
    [found] = detect(project(tmp_path / "p", files), which=everything).ecosystems
    assert found.test.startswith("node --test --test-reporter=spec")
    # No dependencies: nothing to install, no network.
    assert found.setup == "" and detect(tmp_path / "p").hosts == []


def test_a_go_module_downloads_into_the_worktree(tmp_path):
    found = detect(project(tmp_path / "p", GO_PROJECT), which=everything)
    [go] = found.ecosystems
    assert go.setup == "GOPROXY=https://proxy.golang.org go mod download"
    assert go.test == "go test ./..."
    assert found.hosts == ["proxy.golang.org", "sum.golang.org"]
    assert found.env["GOMODCACHE"] == "/workspace/.codex-deps/go/mod"
    assert set(found.key_blobs) == {"go.mod", "go.sum"}
    [no_go] = detect(tmp_path / "p", which=nothing).ecosystems
    assert no_go.setup == "" and "go is not installed" in no_go.notes[0]


def test_a_rust_crate_fetches_only_when_it_has_dependencies(tmp_path):
    [alone] = detect(project(tmp_path / "a", RUST_PROJECT), which=everything).ecosystems
    assert alone.setup == "" and alone.test == "cargo test"
    with_deps = {
        **RUST_PROJECT,
        "Cargo.toml": RUST_PROJECT["Cargo.toml"] + '\n[dependencies]\nserde = "1"\n',
        "Cargo.lock": "version = 3\n",
    }
    found = detect(project(tmp_path / "b", with_deps), which=everything)
    [rust] = found.ecosystems
    assert rust.setup == "cargo fetch --locked"
    assert found.hosts == ["crates.io", "index.crates.io", "static.crates.io"]
    assert found.env == {"CARGO_HOME": "/workspace/.codex-deps/cargo"}


def test_several_ecosystems_set_up_in_turn_and_the_first_one_tests(tmp_path):
    files = {**PYTEST_PROJECT, **node_project()}
    found = detect(project(tmp_path / "p", files), which=everything)
    assert [e.name for e in found.ecosystems] == ["python", "javascript"]
    assert " && npm ci --no-audit --no-fund" in found.setup_command
    assert found.test_command.startswith("python3 -B -m pytest")
    assert any("javascript tests (`npm test" in note for note in found.notes)


def test_nothing_is_detected_in_a_folder_of_plain_files(tmp_path):
    found = detect(project(tmp_path / "p", {"README.md": "hi\n"}))
    assert found.ecosystems == () and found.setup_command == ""
    assert found.test_command == "" and found.as_json()["ecosystems"] == []
