"""scripts/system-packages.sh, the first prerequisite of `make run`, `make
test`, `make demo` and `make eval`: Debian's bubblewrap (and git, and the
python3.X-venv a Debian Python needs) installed by the same command where it
may, as root or through `sudo -n`; otherwise it stops, before anything else,
with the one command to run.

The machine is faked on PATH: apt-get records what it is asked and "installs"
a stand-in command; sudo runs its command only where sudo -n would; id says
which user runs. Nothing is installed for real, and bubblewrap stays
installed on this machine for everyone else's tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "system-packages.sh"
# What the script itself runs, besides the commands faked here.
TOOLS = ("sh", "tr", "env", "cat", "cp", "true")

FAKE_APT = """#!/bin/sh
echo "apt-get $*" >> "$FAKE_LOG"
[ -e "$FAKE_DIR/apt-fails" ] && exit 100
if [ "$1" = install ]; then
  for package in "$@"; do
    case "$package" in
      bubblewrap) cp "$FAKE_DIR/stand-in" "$FAKE_DIR/bin/bwrap" ;;
      git) cp "$FAKE_DIR/stand-in" "$FAKE_DIR/bin/git" ;;
    esac
  done
fi
"""
FAKE_SUDO = """#!/bin/sh
echo "sudo $*" >> "$FAKE_LOG"
[ "$1" = -n ] || exit 1
[ -e "$FAKE_DIR/sudo-allowed" ] || { echo "sudo: a password is required" >&2; exit 1; }
shift
exec "$@"
"""
FAKE_ID = """#!/bin/sh
echo "$FAKE_UID"
"""


class Machine:
    """A PATH with only the script's tools and the fakes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.bin = folder / "bin"
        self.bin.mkdir()
        self.log = folder / "log"
        self.log.touch()
        (folder / "stand-in").write_text("#!/bin/sh\nexit 0\n")
        for tool in TOOLS:
            (self.bin / tool).symlink_to(shutil.which(tool))
        self.add("id", FAKE_ID)

    def add(self, name: str, text: str | None = None) -> None:
        path = self.bin / name
        path.write_text(text or "#!/bin/sh\nexit 0\n")
        path.chmod(0o755)

    def run(self, *, uid: int = 0, sandbox: str = "auto", python: str = sys.executable):
        env = {
            "PATH": str(self.bin),
            "FAKE_LOG": str(self.log),
            "FAKE_DIR": str(self.folder),
            "FAKE_UID": str(uid),
            "CODEX_SANDBOX": sandbox,
        }
        (self.folder / "stand-in").chmod(0o755)
        return subprocess.run(
            ["/bin/sh", str(SCRIPT), python],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    @property
    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()


@pytest.fixture
def machine(tmp_path) -> Machine:
    machine = Machine(tmp_path)
    machine.add("git")
    return machine


def test_nothing_is_done_when_bubblewrap_is_there(machine):
    machine.add("bwrap")
    machine.add("apt-get", FAKE_APT)
    result = machine.run(uid=1000)
    assert result.returncode == 0, result.stderr
    assert machine.calls == []


def test_root_installs_bubblewrap_with_apt_get(machine):
    machine.add("apt-get", FAKE_APT)
    result = machine.run(uid=0)
    assert result.returncode == 0, result.stderr
    assert machine.calls == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends bubblewrap",
    ]
    assert (machine.bin / "bwrap").exists()
    assert "Installing Debian's bubblewrap" in result.stdout


def test_a_user_who_may_sudo_without_a_password_gets_it_installed(machine):
    machine.add("apt-get", FAKE_APT)
    machine.add("sudo", FAKE_SUDO)
    (machine.folder / "sudo-allowed").touch()
    result = machine.run(uid=1000)
    assert result.returncode == 0, result.stderr
    installs = [call for call in machine.calls if "install" in call.split()]
    assert installs[0].startswith("sudo -n env DEBIAN_FRONTEND=noninteractive apt-get")
    assert installs[-1].endswith("--no-install-recommends bubblewrap")
    assert (machine.bin / "bwrap").exists()


def test_otherwise_it_stops_with_the_one_command_to_run(machine):
    machine.add("apt-get", FAKE_APT)
    machine.add("sudo", FAKE_SUDO)  # sudo -n refuses: a password is needed
    result = machine.run(uid=1000)
    assert result.returncode == 1
    assert "sudo apt-get install -y bubblewrap" in result.stderr
    assert not any(call.startswith("apt-get") for call in machine.calls)
    assert not (machine.bin / "bwrap").exists()


def test_a_failed_install_stops_with_the_command_too(machine):
    machine.add("apt-get", FAKE_APT)
    (machine.folder / "apt-fails").touch()
    result = machine.run(uid=0)
    assert result.returncode == 1
    assert "sudo apt-get install -y bubblewrap" in result.stderr


def test_without_apt_get_it_names_the_packages(machine):
    result = machine.run(uid=0)
    assert result.returncode == 1
    assert "needs bubblewrap" in result.stderr
    assert "no apt-get" in result.stderr
    assert "CODEX_SANDBOX=docker" in result.stderr


def test_another_backend_needs_no_bubblewrap(machine):
    machine.add("apt-get", FAKE_APT)
    for sandbox in ("docker", "podman", "none", "DOCKER"):
        result = machine.run(uid=1000, sandbox=sandbox)
        assert result.returncode == 0, (sandbox, result.stderr)
    assert machine.calls == []


def test_git_and_a_debian_pythons_venv_are_installed_with_it(tmp_path):
    machine = Machine(tmp_path)
    machine.add("apt-get", FAKE_APT)
    # A Python without ensurepip, as Debian's is until python3.X-venv is there.
    machine.add(
        "python3",
        '#!/bin/sh\ncase "$2" in "import ensurepip"*) exit 1 ;; esac\necho "3.11"\n',
    )
    result = machine.run(uid=0, python=str(machine.bin / "python3"))
    assert result.returncode == 0, result.stderr
    assert machine.calls[-1] == (
        "apt-get install -y -qq --no-install-recommends bubblewrap git python3.11-venv"
    )


def test_make_runs_it_before_anything_else():
    """`make -n` shows the plan: the packages come first for each command
    (for `demo` and `eval` through their prerequisite lists only)."""
    for target in ("run", "test", "demo", "eval"):
        plan = subprocess.run(
            [
                "make",
                "--no-print-directory",
                "-n",
                "-W",
                "requirements/prod.txt",
                target,
                "VENV=/nonexistent",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            # Not a sub-make of the `make test` that runs this suite.
            env={
                **{k: v for k, v in os.environ.items() if k not in ("MAKELEVEL",)},
                "MAKEFLAGS": "",
            },
            check=False,
        ).stdout.splitlines()
        assert plan[0].endswith("scripts/system-packages.sh python3"), (target, plan)
