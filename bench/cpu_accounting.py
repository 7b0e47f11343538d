"""Where the machine's CPU goes while a benchmark runs: the whole machine's
busy time (/proc/stat), a process group's own and reaped children's CPU
(/proc/<pid>/stat), PostgreSQL's processes and this process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def ticks_per_second() -> int:
    return os.sysconf("SC_CLK_TCK")


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def processes(match) -> Iterator[tuple[Path, list[str]]]:
    """The live processes `match(name, fields)` accepts: their /proc folder
    and the fields of their stat after the name (fields[2] is the process
    group, [11:15] utime, stime, cutime, cstime)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # it ended meanwhile
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        if match(name, fields):
            yield entry, fields


def process_cpu(match) -> dict[str, float]:
    """CPU seconds of the processes `match` accepts (see processes), each
    split into its own (utime + stime) and its reaped children's (cutime +
    cstime: the git and pytest runs a worker waited for, the backends the
    postmaster reaped)."""
    own = children = 0
    for _, fields in processes(match):
        own += int(fields[11]) + int(fields[12])
        children += int(fields[13]) + int(fields[14])
    return {"own": own / ticks_per_second(), "children": children / ticks_per_second()}


def in_group(pgid: int):
    return lambda name, fields: int(fields[2]) == pgid


def group_cpu(pgid: int) -> dict[str, float]:
    """The cluster's process group: its workers with their git and pytest."""
    return process_cpu(in_group(pgid))


def peak_rss_mb(pgid: int) -> float:
    """The highest peak resident memory (VmHWM) of the cluster's processes:
    its workers, after the agent sessions they ran."""
    peak = 0
    for entry, _ in processes(in_group(pgid)):
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]))
    return peak / 1024


def postgresql_cpu() -> float:
    """CPU seconds of every PostgreSQL process of the machine (the bench's
    backends, the postmaster with the backends it reaped, the writers)."""
    cpu = process_cpu(lambda name, fields: name.startswith("postgres"))
    return cpu["own"] + cpu["children"]


def bench_cpu() -> float:
    """CPU seconds of this process so far: the model stub's threads and the
    bench's own polling."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
