"""read_file streams: a line range of a huge file costs the lines, not the
file; one answer holds at most a byte limit and says where to go on; an
over-long line is cut."""

from __future__ import annotations

import pytest

from agents import reading
from agents.sandbox import Sandbox
from tests.fresh_process import last_line_of

# Reads line 1 of a 300 MB file the agent wrote and prints how much the
# process's peak memory grew (kB), after a first read has imported everything.
PEAK_OF_A_READ = """
import resource, sys
import django
django.setup()
from agents.sandbox import Sandbox
sandbox = Sandbox(sys.argv[1], allowed_commands=[])
read = {t.name: t for t in sandbox.tools()}["read_file"]
assert not read.call({"path": "small.txt"}).is_error
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
outcome = read.call({"path": "huge.txt", "start_line": 1, "end_line": 1})
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert not outcome.is_error, outcome.content
assert outcome.content.splitlines()[1] == "1\\tfirst line", outcome.content[:300]
print(after - before)
"""


def test_line_one_of_a_300_mb_file_adds_under_50_mb(worktree):
    (worktree / "small.txt").write_text("hello\n")
    line = b"x" * 99 + b"\n"
    with open(worktree / "huge.txt", "wb") as handle:
        handle.write(b"first line\n")
        block = line * 10_000  # 1 MB
        for _ in range(300):
            handle.write(block)
    grown_kb = int(last_line_of(PEAK_OF_A_READ, str(worktree)))
    assert grown_kb < 50 * 1024


@pytest.fixture
def sandbox(worktree):
    return Sandbox(worktree, allowed_commands=[])


def test_one_answer_stops_at_the_byte_limit_and_says_where_to_go_on(
    sandbox, worktree, monkeypatch
):
    monkeypatch.setattr(reading, "MAX_READ_BYTES", 1000)
    (worktree / "long.txt").write_text("".join(f"line {n:04}\n" for n in range(1, 501)))
    first = sandbox.read_file("long.txt")
    lines = first.splitlines()
    assert lines[0] == "long.txt lines 1-100 of 500"
    assert lines[-1] == (
        "[stopped before line 101: one read returns at most 1000 bytes; "
        "continue with start_line=101]"
    )
    assert len(first) < 2000
    second = sandbox.read_file("long.txt", start_line=101, end_line=102)
    assert second.splitlines() == [
        "long.txt lines 101-102 of 500",
        "101\tline 0101",
        "102\tline 0102",
    ]


def test_an_over_long_line_is_cut_and_the_lines_after_it_read(
    sandbox, worktree, monkeypatch
):
    monkeypatch.setattr(reading, "MAX_READ_LINE_BYTES", 50)
    (worktree / "min.js").write_text("a" * 5_000_000 + "\nsecond\r\nthird")
    lines = sandbox.read_file("min.js").splitlines()
    assert lines[0] == "min.js lines 1-3 of 3"
    assert lines[1] == "1\t" + "a" * 50 + " [line cut at 50 bytes]"
    assert lines[2:] == ["2\tsecond", "3\tthird"]


def test_a_range_past_the_end_and_an_empty_file_are_said_so(sandbox, worktree):
    (worktree / "empty.txt").write_text("")
    assert sandbox.read_file("empty.txt") == "empty.txt is empty (0 lines)"
    with pytest.raises(Exception, match="past the end.*has 2 lines"):
        sandbox.read_file("src/app.py", start_line=5)
