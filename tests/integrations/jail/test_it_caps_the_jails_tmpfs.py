"""The jail's /tmp, home and /dev/shm live in the host's memory: each is a
tmpfs of a capped size (together the command's memory limit), and /dev
itself is read-only, so 2.5 GB written there fails instead of taking the
host's memory."""

from __future__ import annotations

import pytest

from integrations.jail import Jail

FILL = (
    "for i in 1 2 3 4 5; do head -c 500M /dev/zero > {folder}/fill$i || exit 7; "
    "done; echo WROTE ALL"
)


@pytest.mark.parametrize("folder", ["/tmp", "/home/codex", "/dev/shm"])
def test_writing_2_5_gb_fails(jail: Jail, folder):
    assert jail.limits.memory_mb == 2048
    result = jail.run(["bash", "-c", FILL.format(folder=folder)])
    assert "WROTE ALL" not in result.output
    assert result.exit_code == 7
    assert "No space left on device" in result.output


def test_the_caps_add_up_to_the_memory_limit(jail: Jail):
    sizes = {}
    for folder in ("/tmp", "/home", "/dev/shm"):
        shown = jail.run(["df", "--block-size=1M", "--output=size", folder]).output
        sizes[folder] = int(shown.split()[-1])
    assert sizes == {"/tmp": 1024, "/home": 512, "/dev/shm": 512}


def test_dev_is_read_only_and_its_devices_still_work(jail: Jail):
    result = jail.run(
        ["bash", "-c", "echo x > /dev/null && echo NULL OK; touch /dev/planted"]
    )
    assert "NULL OK" in result.output
    assert "Read-only file system" in result.output and result.exit_code != 0
