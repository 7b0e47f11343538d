"""Running git: the one place in Codex that starts a git process (with
`streaming.GitStream`, its twin for a search whose output is read as it comes).

Every git command goes through `run_git` (or `git`, which also reports the exit
status), which

- never uses a shell and never prompts (GIT_TERMINAL_PROMPT=0, stdin closed, or
  holding only the caller's `input` and then closed), so a missing credential
  fails at once instead of hanging a worker;
- runs with a minimal environment: PATH, HOME, LANG, plus what the caller gives
  (the forge's credentials, an author identity). Nothing else of the worker's
  environment (API keys, database URLs) reaches git or the hooks and helpers it
  may start;
- takes credentials only through that environment (`GIT_CONFIG_COUNT`,
  `GIT_CONFIG_KEY_<n>`, `GIT_CONFIG_VALUE_<n>`, e.g. `http.extraheader`): an
  argument or URL carrying one is refused before git starts, because argv is
  visible to every user of the machine (`ps`) and ends up in logs;
- stops at `timeout` seconds (CODEX_GIT_TIMEOUT_SECONDS), killing git and the
  helpers it started (ssh, remote helpers), which would otherwise keep the
  pipes open;
- turns every failure into a `ClassifiedFailure` with source "git", whose
  message is scrubbed of every credential value.

Classification (from git's stderr, read in the C locale so it is English):

| failure | action |
|---|---|
| push rejected: non-fast-forward, fetch first, stale info | pull_retry |
| timeout; network (resolve, connect, hang-up, TLS, HTTP 5xx, 408, 429) | wait_retry |
| any other HTTP 4xx (too large, not found) | abort |
| authentication (401, 403, "Authentication failed", no prompt) | rotate_token |
| merge or rebase conflict | manual_review |
| the folder it runs in is gone (a deleted worktree) | wait_retry |
| another git holds a lock of the repository (ref, index, config) | wait_retry |
| anything else (bad ref, not a repository, git missing) | abort |

Network failures are wait_retry, not abort, because waiting is what makes them
go away (errors.KIND_ACTIONS "connection").
So are lock collisions: git lets go of a lock in moments; one left by a killed
git is removed once no git of Codex's can still hold it (locks.py). Locks of
Codex's own are inherited by every git started while they are held
(`locks.held_locks`), so they outlive a killed worker until its git is done.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from django.conf import settings

from codex.core.errors import (
    NO_RESPONSE,
    Action,
    ClassifiedFailure,
    ErrorKind,
    classify_kind,
    make_error,
)
from integrations.git.locks import held_locks, wait_out_lock_file

SOURCE = "git"


# Variables of the worker's own environment that git may see. LANG is set to C
# rather than copied: stderr is matched against English messages below.
PASSED_THROUGH = ("PATH", "HOME")

# Settings that make git run a program of the repository's choosing, pinned on
# every command: agents write the worktree, so nothing git reads from it or
# from any repository-local file may start code on the worker (hooks run with
# the push credential in their environment). The machine's and the user's
# configuration files are not read at all (`git_environment`), so no filter,
# diff or merge driver is defined that a `.gitattributes` could name.
HARDENED = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.sshCommand=ssh",
    "-c",
    "core.pager=cat",
    "-c",
    "core.editor=true",
    "-c",
    "sequence.editor=true",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "submodule.recurse=false",
    # A nested repository an agent made would otherwise be asked for its
    # status, and that git reads the nested repository's own config.
    "-c",
    "diff.ignoreSubmodules=all",
    # A push over a local path starts the receiving git itself, without our
    # settings (git drops them for the other side): the local forge's bare
    # repository runs no hook either.
    "-c",
    "remote.origin.receivepack=git -c core.hooksPath=/dev/null receive-pack",
    "-c",
    "gpg.program=false",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "tag.gpgSign=false",
)

# The most of git's stderr a message keeps: enough to see what failed, short
# enough for a task's error list and an event.
MESSAGE_LIMIT = 600

# Values shorter than this are not scrubbed from messages: replacing "1" or
# "x" everywhere would make every message unreadable and protects nothing.
MIN_SECRET_LENGTH = 4

# Environment variables whose values are configuration, not secrets; everything
# else the caller gives (GIT_CONFIG_VALUE_0, tokens, ...) is treated as secret.
NOT_SECRET = re.compile(
    r"^(GIT_CONFIG_COUNT|GIT_CONFIG_KEY_\d+|GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)"
    r"|GIT_TERMINAL_PROMPT|GIT_EDITOR|GIT_SEQUENCE_EDITOR|LANG|LC_ALL)$"
)

URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
# The header's value is one word, or a scheme and one word, on the same line.
AUTH_HEADER = re.compile(r"(?i)(authorization:[ \t]*)(\S+[ \t]+)?\S+")

NON_FAST_FORWARD = re.compile(
    r"non-fast-forward|\(fetch first\)|\(stale info\)|updates were rejected because"
    r"|tip of your current branch is behind",
    re.IGNORECASE,
)
CONFLICT = re.compile(
    r"^CONFLICT|merge conflict|automatic merge failed|could not apply"
    r"|needs merge|unmerged files|fix conflicts",
    re.IGNORECASE | re.MULTILINE,
)
AUTH = re.compile(
    r"authentication failed|could not read (username|password)"
    r"|terminal prompts disabled|invalid credentials|access denied"
    r"|permission denied \(publickey|returned error: 40[13]|bad credentials"
    r"|invalid username or (password|token)",
    re.IGNORECASE,
)
NETWORK = re.compile(
    r"could not resolve host|connection refused|connection timed out"
    r"|connection reset|the remote end hung up|early eof|returned error: 5\d\d"
    r"|operation timed out|network is unreachable|failed to connect"
    # curl's transport failures (partial transfer, empty reply, send or receive
    # failure, HTTP/2 stream reset), TLS cut short, a sideband cut off, and the
    # statuses that ask to come back later (timeout, rate limit).
    r"|rpc failed; curl (18|52|55|56|92)\b|transfer closed with outstanding"
    r"|gnutls_handshake\(\) failed|gnutls recv error|ssl_read|ssl_error_syscall"
    r"|unexpected disconnect while reading sideband|returned error: (408|429)\b"
    r"|temporary failure in name resolution|operation too slow",
    re.IGNORECASE,
)
# The server refused the request itself (a 4xx but a timeout or a rate limit,
# which pass with time; 401 and 403 are authentication, matched before): the
# connection closing after it is no network failure, and the request aborts.
REFUSED = re.compile(r"returned error: 4(?!08|29)\d\d\b", re.IGNORECASE)

# Another git holds one of the repository's locks. "is at X but expected Y":
# a ref changed between git reading it and locking it (a concurrent update).
BUSY = re.compile(
    r"cannot lock ref|unable to create '[^']+\.lock': file exists"
    r"|could not lock config file|but expected [0-9a-f]{7,}",
    re.IGNORECASE,
)

# Below this many bytes a second for CODEX_GIT_STALL_SECONDS, a transfer over
# HTTP(S) is stalled (`_stall_limit`).
LOW_SPEED_BYTES = 1000

# Pauses before running a command again that failed only because the
# repository was busy (`git(..., busy_tries=n)`).
BUSY_PAUSE_SECONDS = 0.2


@dataclass(frozen=True)
class GitResult:
    """What a finished git command printed and how it exited."""

    returncode: int
    stdout: str
    stderr: str


class GitCommandError(Exception):
    """The original error behind a ClassifiedFailure of git: the (credential
    free) command, its exit status and its scrubbed stderr."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        self.command = list(args)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"git {' '.join(self.command)} exited {returncode}")

    def __reduce__(self):
        # Copyable and picklable (ClassifiedError.as_dict deep-copies it; a
        # queued job may pickle it) although __init__ takes three arguments.
        return (type(self), (self.command, self.returncode, self.stderr))


def git_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a git process gets: PATH and HOME of the worker, the C
    locale, no prompts, and `env` (credentials, identity) on top."""
    base = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    base.setdefault("PATH", os.defpath)
    base.update(
        {
            "LANG": "C",
            "LC_ALL": "C",
            # With stdin closed, no terminal (own session) and no askpass
            # program in this environment, nothing can ask for a password.
            "GIT_TERMINAL_PROMPT": "0",
            # Only Codex's own settings apply: no machine-wide or user file
            # can define hooks, filters or helpers that git would run.
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
        }
    )
    base.update(env or {})
    return base


def secrets_of(env: Mapping[str, str] | None) -> list[str]:
    """The values in `env` that must never appear in argv or a message."""
    values = [
        value
        for name, value in (env or {}).items()
        if not NOT_SECRET.match(name) and len(value) >= MIN_SECRET_LENGTH
    ]
    # An http.extraheader value is "Authorization: Basic <token>": its token part
    # alone must not leak either.
    for value in list(values):
        values.extend(
            part
            for part in value.split()
            if len(part) >= MIN_SECRET_LENGTH * 2 and not part.endswith(":")
        )
    # Longest first, so a value containing another is replaced whole.
    return sorted(set(values), key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """`text` without credentials: the given secret values, URL user info and
    Authorization header values are replaced by ***."""
    for secret in secrets:
        text = text.replace(secret, "***")
    text = URL_USERINFO.sub(r"\g<scheme>***@", text)
    return AUTH_HEADER.sub(r"\1***", text)


def _refuse_credentials_in(args: Sequence[str], secrets: Sequence[str]) -> None:
    """Raise when an argument carries a credential: a bug in the caller, which
    must pass credentials through the environment."""
    for arg in args:
        if URL_USERINFO.search(arg) or any(secret in arg for secret in secrets):
            raise ValueError(
                "git arguments must not carry credentials; pass them in the "
                "environment (GIT_CONFIG_COUNT/KEY/VALUE)"
            )


def classify_stderr(
    args: Sequence[str], returncode: int, stderr: str, stdout: str = ""
) -> ClassifiedFailure:
    """The ClassifiedFailure for a git command that exited `returncode` with
    (already scrubbed) `stderr` and `stdout`: some commands (merge, rebase)
    report conflicts on standard output."""
    original = GitCommandError(args, returncode, stderr)
    verb = _verb(args)
    detail = _tail(stderr) or _tail(stdout) or f"exit status {returncode}"
    stderr = f"{stderr}\n{stdout}"
    message = f"git {verb}: {detail}"
    if CONFLICT.search(stderr):
        error = classify_kind(
            SOURCE, ErrorKind.MERGE_CONFLICT, message=message, original=original
        )
    elif NON_FAST_FORWARD.search(stderr):
        error = classify_kind(
            SOURCE, ErrorKind.NON_FAST_FORWARD, message=message, original=original
        )
    elif AUTH.search(stderr):
        error = make_error(
            SOURCE,
            NO_RESPONSE,
            Action.ROTATE_TOKEN,
            f"Authentication failed - trying another token: {message}",
            original=original,
        )
    elif NETWORK.search(stderr) and not REFUSED.search(stderr):
        error = classify_kind(
            SOURCE, ErrorKind.CONNECTION, message=message, original=original
        )
    elif BUSY.search(stderr):
        error = make_error(
            SOURCE,
            NO_RESPONSE,
            Action.WAIT_RETRY,
            f"Repository busy (another git holds its lock) - waiting: {message}",
            original=original,
        )
    else:
        error = make_error(
            SOURCE,
            NO_RESPONSE,
            Action.ABORT,
            f"git failed: {message}",
            original=original,
        )
    return error.exception()


def _verb(args: Sequence[str]) -> str:
    """The git subcommand of `args` (after options such as `-c key=value`)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "git"


def _tail(stderr: str) -> str:
    """The end of stderr on one line: git says what went wrong last."""
    text = " | ".join(line.strip() for line in stderr.splitlines() if line.strip())
    if len(text) > MESSAGE_LIMIT:
        text = "..." + text[-MESSAGE_LIMIT:]
    return text


def git(
    args: Sequence[str],
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    *,
    check: bool = True,
    busy_tries: int = 1,
    input: str | None = None,  # noqa: A002 - subprocess's name for it
) -> GitResult:
    """Run `git <args>` in `cwd`; return its exit status and output.

    With `check` (the default) a non-zero exit raises a ClassifiedFailure;
    without it the caller reads `returncode` (e.g. `rev-parse --verify`).
    A timeout, or git not being runnable at all, always raises.

    `busy_tries`: how often to run a command that fails only because another
    git holds a lock of the repository, pausing in between (for commands that
    are safe to repeat, such as a fetch); the last failure is raised.

    `input`: text for git's standard input, closed after it (the object names
    of a `cat-file --batch`, which reads many objects in one process).
    """
    args = [str(arg) for arg in args]
    secrets = secrets_of(env)
    _refuse_credentials_in(args, secrets)
    limit = settings.CODEX_GIT_TIMEOUT_SECONDS if timeout is None else timeout
    for attempt in range(1, max(1, busy_tries) + 1):
        result = _run(args, cwd, env, limit, secrets, input)
        if result.returncode == 0 or not check:
            return result
        if attempt < busy_tries and BUSY.search(result.stderr):
            pause_while_busy(attempt)
            continue
        break
    if not os.path.isdir(cwd):
        raise _gone(args, cwd)
    failure = classify_stderr(
        args, result.returncode, result.stderr, scrub(result.stdout, secrets)
    )
    wait = wait_out_lock_file(result.stderr)
    if wait:
        failure = replace(failure.error, retry_after=wait).exception()
    raise failure


def _run(
    args: list[str],
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None,
    limit: float,
    secrets: Sequence[str],
    input: str | None = None,  # noqa: A002 - subprocess's name for it
) -> GitResult:
    """One run of git; its stderr scrubbed, its stdout as printed."""
    try:
        process = subprocess.Popen(
            ["git", *HARDENED, *_stall_limit(), *args],
            cwd=os.fspath(cwd),
            env=git_environment(env),
            stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            # Its own process group, so a timeout kills ssh and remote helpers too.
            start_new_session=True,
            pass_fds=held_locks(),
        )
    except OSError as exc:
        if not os.path.isdir(cwd):
            raise _gone(args, cwd) from None
        # git missing: nothing a retry changes.
        raise make_error(
            SOURCE,
            NO_RESPONSE,
            Action.ABORT,
            f"git {_verb(args)}: cannot run git in {os.fspath(cwd)}: "
            f"{exc.strerror or exc}",
        ).exception() from None
    try:
        stdout, stderr = _communicate(process, input, limit)
    except subprocess.TimeoutExpired:
        raise classify_kind(
            SOURCE,
            ErrorKind.TIMEOUT,
            message=f"git {_verb(args)} took longer than {limit}s",
            original=GitCommandError(args, -1, "timed out"),
        ).exception() from None
    return GitResult(process.returncode, stdout, scrub(stderr, secrets))


def pause_while_busy(attempt: int) -> None:
    """Give the git holding a lock time to finish (longer each attempt)."""
    time.sleep(BUSY_PAUSE_SECONDS * attempt)


def _stall_limit() -> list[str]:
    """git's own limit on a stalled HTTP(S) transfer (CODEX_GIT_STALL_SECONDS
    under 1 KB/s). The timeout of `git` stops only a git whose worker still
    runs; a killed worker's git would otherwise wait on a dead connection for
    ever, holding the locks it inherited."""
    stall = settings.CODEX_GIT_STALL_SECONDS
    return [
        "-c",
        f"http.lowSpeedLimit={LOW_SPEED_BYTES}",
        "-c",
        f"http.lowSpeedTime={stall}",
    ]


def _gone(args: Sequence[str], cwd: str | os.PathLike[str]) -> ClassifiedFailure:
    """The folder git runs in vanished, before git started or while it ran (a
    worktree deleted under a running agent, a reaper, a person): the next step
    makes it again, so wait and retry."""
    return make_error(
        SOURCE,
        NO_RESPONSE,
        Action.WAIT_RETRY,
        f"git {_verb(args)}: {os.fspath(cwd)} is gone - the next step recreates it",
    ).exception()


def _communicate(
    process: subprocess.Popen, input: str | None, limit: float
) -> tuple[str, str]:
    """`process.communicate(input)`, git and everything it started killed
    after `limit` seconds (TimeoutExpired then, once it is reaped).

    A watchdog rather than communicate's own timeout: with one, its last
    wait for git to exit polls with sleeps doubling from half a millisecond,
    which made a short git (a rev-parse) take three times as long as git
    itself on a busy machine (bench/git_steps.py). The watchdog is a bare
    thread, which nothing waits for to start (threading.Thread.start would,
    another context switch per git).
    """
    done = threading.Event()
    expired: list[bool] = []

    def watch() -> None:
        if not done.wait(limit):
            expired.append(True)
            _kill(process)

    _thread.start_new_thread(watch, ())
    try:
        stdout, stderr = process.communicate(input)
    finally:
        done.set()
    if expired:
        raise subprocess.TimeoutExpired(process.args, limit)
    return stdout, stderr


def _kill(process: subprocess.Popen) -> None:
    """Kill git and everything it started (its own process group), unless it
    was reaped already (its id may be another process's by then)."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def run_git(
    args: Sequence[str],
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> str:
    """Run `git <args>` in `cwd` and return its standard output (unstripped).

    `env` adds to the minimal environment (credentials, identity); `timeout`
    defaults to CODEX_GIT_TIMEOUT_SECONDS. Any failure raises a
    ClassifiedFailure with source "git" (see the module docstring).
    """
    return git(args, cwd, env, timeout).stdout
