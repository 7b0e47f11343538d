"""Figure 10: the git steps of a task on a big repository. On a generated
repository of 100,000 files and 50,000 commits (bench/large_repository.py; 2,000
files and 500 commits in smoke mode), served by the local forge (a bare
repository on this disk as origin), each git step Codex runs for a task is timed
through the product's own functions, and against it the same step done by bare
git (the commands an expert would type) in the same run:

- the mirror's first clone (`ensure_mirror` on no mirror) against
  `git clone --mirror --no-local`;
- the mirror's fetch once origin gained a commit (`ensure_mirror` again)
  against `git fetch --prune` in the bare mirror;
- the task's worktree (`add_worktree` and `fast_forward`, what a phase runs
  after the fetch, agents/phase_runner.prepare_worktree) against
  `git worktree add -b`;
- the rules lookup (agents/people.repository_rules, its per-process caches
  emptied: a step's first look at a new commit; and again at a later step,
  the caches kept) against `git diff --name-only` and one `git cat-file
  --batch` of the same files;
- a commit of a small change (`commit_all`) against `git add --all` and
  `git commit`;
- the push (`push`) against `git push`;
- the clean-up (`remove_worktree` with the branch, then `prune_worktrees`, as
  the release does) against `git worktree remove --force` and `git branch -D`.

Each is the median of a few runs, Codex's and bare git's in turns (which goes
first alternates) so that a machine getting busier weighs on both alike; the
goal is at most 1.3x bare git. What is judged is CPU: this process's (Codex's
Python; the bare runs' subprocess calls) and that of the gits it started.
Wall clock is in the notes: a checkout or removal of 100,000 files waits on
the disk, which on a shared machine made the same bare `git worktree add`
take 4 s and 25 s in one run. Disk: the bytes a live task holds (its
worktree, its administrative folder in the mirror with the index, and the
objects its commit added to the mirror), and what is left of the task once
cleaned up (goal: nothing).
"""

from __future__ import annotations

import gc
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.common import GIT_ENV, ROOT, figure
from bench.large_repository import layout, repository

FILES, COMMITS = 100_000, 50_000
SMOKE_FILES, SMOKE_COMMITS = 2_000, 500
GOAL = 1.3
RULES = "# How we work here\n\nRun the tests before every commit.\n"


@dataclass(frozen=True)
class Served:
    """The repository on the local forge, as ensure_mirror names it (a
    repository row's URL and owner/name)."""

    path: Path

    @property
    def url(self) -> str:
        return f"file://{self.path}"

    @property
    def full_name(self) -> str:
        return "bench/big"


def bare(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Bare git, as a person runs it (their identity, no Codex settings)."""
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", os.defpath), **GIT_ENV, **(env or {})},
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def disk_bytes(*paths: Path) -> int:
    """Bytes on disk (blocks, not apparent sizes) under `paths`; 0 for those
    that are gone."""
    present = [str(p) for p in paths if p.exists()]
    if not present:
        return 0
    out = subprocess.run(
        ["du", "-s", "-c", "--block-size=1", *present],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return int(out.splitlines()[-1].split()[0])


def origin_gains_commit(forge: Path, files: dict[str, str], message: str) -> str:
    """A commit on the forge's main changing `files`, made with plumbing (no
    checkout of the big tree): someone else pushed."""
    index = forge / "bench-index"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        bare("read-tree", "main", cwd=forge, env=env)
        for path, text in files.items():
            blob = subprocess.run(
                ["git", "hash-object", "-w", "--stdin"],
                cwd=forge,
                input=text,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            bare(
                "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}",
                cwd=forge, env=env,
            )  # fmt: skip
        tree = bare("write-tree", cwd=forge, env=env).strip()
        head = bare("rev-parse", "main", cwd=forge).strip()
        commit = bare("commit-tree", tree, "-p", head, "-m", message, cwd=forge)
        bare("update-ref", "refs/heads/main", commit.strip(), head, cwd=forge)
        return commit.strip()
    finally:
        index.unlink(missing_ok=True)


@dataclass(frozen=True)
class Sample:
    """One run of a step: its wall seconds, and the CPU seconds it took in
    this process (Codex's Python) and in the processes it started (git)."""

    wall: float
    own_cpu: float
    git_cpu: float

    @property
    def cpu(self) -> float:
        return self.own_cpu + self.git_cpu


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def timed(call: Callable[[], object]) -> Sample:
    """One run of `call`, with Python's garbage collector off as timeit has
    it: a full collection of this process's objects (Django's, the earlier
    steps') costs tens of milliseconds whichever step it falls in."""
    gc.collect()
    gc.disable()
    try:
        own, children = _cpu()
        started = time.perf_counter()
        call()
        wall = time.perf_counter() - started
        own_after, children_after = _cpu()
    finally:
        gc.enable()
    return Sample(wall, own_after - own, children_after - children)


class Steps:
    """The samples of each step, Codex's and bare git's."""

    def __init__(self) -> None:
        self.samples: dict[str, tuple[list[Sample], list[Sample]]] = {}

    def pair(self, step: str, codex: Callable, plain: Callable, turn: int) -> None:
        """Time Codex's and bare git's way of `step`, in the order `turn` says."""
        kept = self.samples.setdefault(step, ([], []))
        order = [(codex, kept[0]), (plain, kept[1])]
        for call, samples in order if turn % 2 == 0 else order[::-1]:
            samples.append(timed(call))

    def median(self, step: str, measure: str) -> tuple[float, float, int]:
        """The median `measure` ("cpu", "wall", "git_cpu") of Codex's runs of
        `step` and of bare git's, and how many runs each."""
        codex, plain = self.samples[step]
        return (
            statistics.median(getattr(s, measure) for s in codex),
            statistics.median(getattr(s, measure) for s in plain),
            len(codex),
        )


def run(
    smoke: bool,
    *,
    files: int | None = None,
    commits: int | None = None,
    root: Path | None = None,
) -> list[dict]:
    """The figures; `files` and `commits` change the repository's size (the
    tests'), `root` where it is kept and the run works (var/bench)."""
    from django.test import override_settings

    files = files or (SMOKE_FILES if smoke else FILES)
    commits = commits or (SMOKE_COMMITS if smoke else COMMITS)
    root = root or ROOT / "var" / "bench"
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    source = repository(files, root / "repositories", commits=commits, bare=True)
    made_in = time.perf_counter() - started
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        work = Path(tmp)
        with override_settings(
            CODEX_MIRROR_ROOT=str(work / "mirrors"),
            CODEX_WORKTREE_ROOT=str(work / "worktrees"),
            # A first clone of the big repository may take minutes on a busy
            # machine: the figure measures it rather than stop it.
            CODEX_GIT_TIMEOUT_SECONDS=3600,
        ):
            return measure(source, work, files, commits, smoke, made_in)


def measure(
    source: Path, work: Path, files: int, commits: int, smoke: bool, made_in: float
) -> list[dict]:
    from agents import people
    from integrations.git import (
        add_worktree,
        branch_name,
        commit_all,
        ensure_mirror,
        fast_forward,
        mirror_path,
        prune_worktrees,
        push,
        remove_worktree,
    )

    # The forge: a copy of the kept repository (its objects hard-linked) that
    # this run may add commits and branches to.
    forge_path = work / "forge" / "big.git"
    forge_path.parent.mkdir()
    bare(
        "clone", "--bare", "--local", "--quiet", str(source), str(forge_path), cwd=work
    )
    forge = Served(forge_path)
    remote = str(forge_path)
    mirror = mirror_path(forge)
    plain_mirror = work / "bare-mirror.git"
    steps = Steps()
    clones = 2
    tasks = 2 if smoke else 5

    # The first clone: no mirror yet.
    for turn in range(clones):
        shutil.rmtree(mirror, ignore_errors=True)
        shutil.rmtree(plain_mirror, ignore_errors=True)
        steps.pair(
            "first_clone",
            lambda: ensure_mirror(forge, remote, {}),
            lambda: bare(
                "clone",
                "--mirror",
                "--no-local",
                "--quiet",
                remote,
                str(plain_mirror),
                cwd=work,
            ),  # fmt: skip
            turn,
        )
    mirror_bytes = disk_bytes(mirror)

    # Someone pushes to main, then each mirror fetches. The first push adds
    # the rules files the lookup reads (at the root and in one folder).
    modules, _ = layout(files)
    ruled = modules["py"][len(modules["py"]) // 2]
    for turn in range(tasks):
        changes = {f"CHANGES-{turn}.md": f"change {turn}\n"}
        if turn == 0:
            changes |= {"AGENTS.md": RULES, f"{ruled.folder}/AGENTS.md": RULES}
        origin_gains_commit(forge_path, changes, f"Someone else's change {turn}")
        steps.pair(
            "fetch",
            lambda: ensure_mirror(forge, remote, {}),
            lambda: bare("fetch", "--prune", "--quiet", "origin", cwd=plain_mirror),
            turn,
        )

    # A task from start to end, Codex's way and bare git's, a few times.
    live: list[dict[str, int]] = []
    left: list[dict[str, int]] = []
    for turn in range(tasks):
        task = f"BENCH-{turn}"
        branch = branch_name(task)
        ours = work / "worktrees" / task
        theirs = work / "bare-worktrees" / task
        theirs.parent.mkdir(exist_ok=True)
        objects_before = disk_bytes(mirror / "objects")

        def codex_worktree(ours=ours, branch=branch):
            add_worktree(mirror, ours, branch, "main")
            fast_forward(ours, branch)

        steps.pair(
            "worktree",
            codex_worktree,
            lambda theirs=theirs, task=task: bare(
                "worktree",
                "add",
                "--quiet",
                "--no-track",
                "-b",
                f"bare/{task}",
                str(theirs),
                "main",
                cwd=plain_mirror,
            ),  # fmt: skip
            turn,
        )
        for tree in (ours, theirs):
            _small_change(tree, ruled.path, turn)

        steps.pair(
            "commit",
            lambda ours=ours, task=task: commit_all(ours, "A small change", task),
            lambda theirs=theirs: (
                bare("add", "--all", cwd=theirs),
                bare("commit", "--quiet", "-m", "A small change", cwd=theirs),
            ),
            turn,
        )

        def codex_rules(ours=ours):
            people._FILES_AT.clear()
            people._TEXT_AT.clear()
            people._FOLDERS_OF.clear()
            text, record = people.repository_rules(ours, "origin/main")
            assert len(record.get("paths", [])) == 2, record

        steps.pair(
            "rules_lookup",
            codex_rules,
            lambda theirs=theirs: _bare_rules(theirs, "main"),
            turn,
        )

        def codex_rules_again(ours=ours):
            text, record = people.repository_rules(ours, "origin/main")
            assert len(record.get("paths", [])) == 2, record

        steps.pair(
            "rules_lookup_later_step",
            codex_rules_again,
            lambda theirs=theirs: _bare_rules(theirs, "main"),
            turn,
        )
        steps.pair(
            "push",
            lambda ours=ours, branch=branch: push(ours, branch, {}),
            # To origin's URL: a mirror clone's remote refuses a refspec.
            lambda theirs=theirs, task=task: bare(
                "push",
                "--quiet",
                remote,
                f"HEAD:refs/heads/bare/{task}",
                cwd=theirs,
            ),  # fmt: skip
            turn,
        )
        admin = _admin_folder(ours)
        live.append(
            {
                "worktree": disk_bytes(ours),
                "admin": disk_bytes(admin),
                "objects": max(0, disk_bytes(mirror / "objects") - objects_before),
                "bare_worktree": disk_bytes(theirs, _admin_folder(theirs)),
            }
        )

        def codex_cleanup(ours=ours):
            remove_worktree(mirror, ours, delete_branch=True)
            prune_worktrees(mirror)

        steps.pair(
            "cleanup",
            codex_cleanup,
            lambda theirs=theirs, task=task: (
                bare("worktree", "remove", "--force", str(theirs), cwd=plain_mirror),
                bare("branch", "-D", f"bare/{task}", cwd=plain_mirror),
            ),
            turn,
        )
        branch_left = bare("branch", "--list", branch, cwd=mirror).strip()
        left.append(
            {
                "bytes": disk_bytes(ours, admin),
                "branch": int(bool(branch_left)),
                "registered": int(str(ours.resolve()) in _worktree_list(mirror)),
            }
        )
    return _figures(steps, live, left, files, commits, made_in, mirror_bytes)


def _small_change(tree: Path, ruled: str, turn: int) -> None:
    """What a task's agent writes: a line in a file of the folder with rules
    of its own, and a new file beside it."""
    with (tree / ruled).open("a") as out:
        out.write(f"\n# changed by the bench, task {turn}\n")
    (tree / ruled).with_name(f"added_{turn}.py").write_text("VALUE = 1\n")


def _bare_rules(worktree: Path, base: str) -> None:
    """The rules files at `base` as a person would read them: the folders the
    branch touched (and their parents, as Codex looks), then every candidate
    file in one `git cat-file`."""
    names = bare("diff", "--name-only", f"{base}...HEAD", cwd=worktree).split()
    folders = {str(folder) for n in names for folder in Path(n).parents} - {"."}
    candidates = ["AGENTS.md", "CLAUDE.md", ".codex/rules.md"]
    candidates += [f"{folder}/AGENTS.md" for folder in sorted(folders)]
    subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=worktree,
        input="".join(f"{base}:{path}\n" for path in candidates),
        env={"PATH": os.environ.get("PATH", os.defpath), **GIT_ENV},
        check=True,
        capture_output=True,
        text=True,
    )


def _admin_folder(worktree: Path) -> Path:
    """The worktree's folder in its repository (`.git` link's target), where
    its index and HEAD live."""
    link = worktree / ".git"
    if not link.is_file():
        return worktree / ".git-admin-gone"
    return (worktree / link.read_text().strip().removeprefix("gitdir: ")).resolve()


def _worktree_list(repo: Path) -> str:
    return bare("worktree", "list", "--porcelain", cwd=repo)


STEP_NOTES = {
    "first_clone": "ensure_mirror with no mirror (a bare clone of every branch "
    "into refs/remotes/origin/, its local branches dropped) against `git clone "
    "--mirror --no-local`",
    "fetch": "ensure_mirror on the mirror after origin's main gained a commit, "
    "against `git fetch --prune` in the bare mirror",
    "worktree": "add_worktree on a new task branch from origin's main, then "
    "fast_forward (prepare_worktree after its fetch), against `git worktree "
    "add --no-track -b`",
    "rules_lookup": "agents.people.repository_rules after the task's first "
    "commit, its per-process caches emptied (the first look at a commit), "
    "against `git diff --name-only base...HEAD` and one `git cat-file "
    "--batch` of the same candidate files (the root's, and AGENTS.md in each "
    "folder the branch touched and their parents)",
    "rules_lookup_later_step": "the same lookup at a later step of the task "
    "(the same commits: what this process read is kept), against the same "
    "bare git lookup",
    "commit": "commit_all of a changed and a new file, against `git add --all` "
    "and `git commit`",
    "push": "push of the task branch (one new commit) to the forge, against "
    "`git push` of bare git's own commit to a branch beside it",
    "cleanup": "remove_worktree with delete_branch (the release's clean-up), "
    "then prune_worktrees, against `git worktree remove --force` and "
    "`git branch -D`",
}


def _figures(
    steps: Steps,
    live: list[dict[str, int]],
    left: list[dict[str, int]],
    files: int,
    commits: int,
    made_in: float,
    mirror_bytes: int,
) -> list[dict]:
    results = []
    size = f"{files:,} files, {commits:,} commits"
    for step, note in STEP_NOTES.items():
        codex, plain, runs = steps.median(step, "cpu")
        ratio = codex / plain if plain else None
        wall, plain_wall, _ = steps.median(step, "wall")
        in_git, plain_in_git, _ = steps.median(step, "git_cpu")
        each = " ".join(
            f"{label} {', '.join(f'{x.wall:.3g}' for x in samples)} s;"
            for label, samples in zip(
                ("Codex", "bare"), steps.samples[step], strict=True
            )
        )
        results.append(
            figure(
                f"git_{step}_cpu_seconds",
                codex,
                "CPU s",
                ceiling=plain,
                goal=f"<= {GOAL}x bare git",
                meets=ratio is not None and ratio <= GOAL,
                notes=(
                    f"{size}; {note}; median of {runs} of the CPU this process "
                    f"and the gits it started took (in git {in_git:.3g} s, "
                    f"bare git's {plain_in_git:.3g} s); wall clock {wall:.3g} s "
                    f"against {plain_wall:.3g} s ({wall / plain_wall:.2f}x; "
                    f"each run: {each[:-1]})"
                ),
                wall_seconds=round(wall, 4),
                bare_wall_seconds=round(plain_wall, 4),
            )
        )
    worktree = statistics.median(t["worktree"] for t in live)
    admin = statistics.median(t["admin"] for t in live)
    objects = statistics.median(t["objects"] for t in live)
    per_task = worktree + admin + objects
    plain_task = statistics.median(t["bare_worktree"] for t in live)
    results.append(
        figure(
            "git_disk_per_live_task_mb",
            per_task / 1e6,
            "MB",
            ceiling=plain_task / 1e6,
            goal=f"reported (ceiling: bare git's worktree; <= {GOAL}x)",
            meets=per_task <= GOAL * plain_task,
            notes=(
                f"{size}: the checkout {worktree / 1e6:.1f} MB, its folder in "
                f"the mirror (index, HEAD) {admin / 1e6:.1f} MB, objects its "
                f"commit added to the mirror {objects / 1e6:.2f} MB; the "
                f"mirror itself, shared by every task, {mirror_bytes / 1e6:.0f} MB; "
                f"median of {len(live)} tasks"
            ),
        )
    )
    bytes_left = max(t["bytes"] for t in left)
    refs_left = sum(t["branch"] + t["registered"] for t in left)
    results.append(
        figure(
            "git_bytes_left_after_cleanup",
            bytes_left,
            "bytes",
            goal="== 0 (and no branch or worktree entry left)",
            meets=bytes_left == 0 and refs_left == 0,
            notes=(
                f"the most any of {len(left)} tasks left of its worktree and "
                f"its folder in the mirror; {refs_left} local branches or "
                "worktree entries left. The pushed branch's remote-tracking "
                "ref stays while origin has the branch (its pull request's); "
                f"the repository was generated in {made_in:.1f} s this run "
                "(or kept from an earlier one)"
            ),
        )
    )
    return results


if __name__ == "__main__":
    # This figure alone, without bench.run's database: python -m bench.git_steps
    # [--smoke]. Prints the figures as JSON.
    import json
    import sys

    from bench.common import bench_env

    os.environ.update(bench_env())
    import django

    django.setup()
    print(json.dumps(run("--smoke" in sys.argv), indent=2))
