"""GitStream: git's output read as it comes, git killed at its deadline or
when the caller stops reading, its exit status once all was read."""

from __future__ import annotations

import time

from integrations.git.streaming import GitStream


def test_all_read_gives_the_exit_status_and_the_output(tmp_path):
    with GitStream(["version"], tmp_path, timeout=30) as stream:
        output = b"".join(stream.chunks())
    assert output.startswith(b"git version ")
    assert stream.returncode == 0 and not stream.timed_out
    with GitStream(["no-such-command"], tmp_path, timeout=30) as failed:
        assert b"".join(failed.chunks()) == b""
    assert failed.returncode == 1
    assert "is not a git command" in failed.stderr


def test_a_git_past_its_deadline_is_killed(tmp_path):
    started = time.monotonic()
    slow = ["-c", "alias.slow=!sleep 30", "slow"]
    with GitStream(slow, tmp_path, timeout=0.5) as stream:
        assert b"".join(stream.chunks()) == b""
    assert time.monotonic() - started < 10
    assert stream.timed_out and stream.returncode is None


def test_a_caller_that_stops_reading_stops_git(tmp_path):
    endless = ["-c", "alias.endless=!yes needle", "endless"]
    started = time.monotonic()
    with GitStream(endless, tmp_path, timeout=30) as stream:
        for chunk in stream.chunks():
            assert chunk.startswith(b"needle")
            break
    assert time.monotonic() - started < 10
    assert stream.returncode is None and not stream.timed_out
