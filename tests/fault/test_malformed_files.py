"""Malformed claim, board and session files fed to the importers.

`manage.py import_issue_claims`, `import_github_project` and
`import_session_logs` get invalid JSON, YAML, wrong types, missing fields, a
BOM, NUL and other control characters, binary garbage, a huge line, deeply
nested JSON, numbers and dates no column holds, a directory and an unreadable
file. Each must end in a CommandError (manage.py prints it without a
traceback and exits 1) that names the line and the field, short enough to
read, and must import nothing: an import is all or nothing. A BOM is accepted
(editors write one); a U+2028 inside a JSON string is not a line break.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from codex.claims.models import BoardItem, IssueClaim
from codex.events.models import Event
from codex.fleet.models import AgentRun
from codex.github.models import GitHubProject
from tests.factories import make_repository
from tests.fault.services import ROOT
from tests.fleet.factories import SESSION_LOG_EXAMPLE

pytestmark = pytest.mark.django_db

URL = "https://github.com/acme/importer"

CLAIM = {
    "session_id": "session_20251217_143022_1",
    "claimed_at": "2025-12-17T14:30:22.123456",
    "title": "Add user authentication",
}
PROJECT = {
    "project_id": "PVT_kwDOmalformed",
    "project_number": 1,
    "status_field_id": "PVTSSF_abc123",
    "status_options": {"Todo": "t1", "In Progress": "p1", "Done": "d1"},
    "items": {
        "42": {
            "item_id": "PVTI_malformed",
            "status": "In Progress",
            "added_at": "2025-12-17T14:00:00",
        }
    },
}
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "x" * 3_000_000

# What every command refuses the same way: (name, file bytes, line, what).
COMMON = [
    ("invalid JSON", b'{"42": {"session_id": ', 1, "json"),
    ("YAML", b"42:\n  session_id: s1\n  title: t\n", 1, "json"),
    ("raw NUL", b'{"42": {"title": "a\x00b"}}', 1, "json"),
    ("raw BEL on line 2", b'{\n"42": {"title": "a\x07b"}}', 2, "json"),
    ("binary garbage", b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x00\x00", 1, "utf8"),
    ("bad UTF-8 on line 3", b'{\n"a": 1,\n"b": "\xc3\x28"}', 3, "utf8"),
    ("deeply nested", DEEP.encode(), 1, "deep"),
]


@pytest.fixture
def repository():
    return make_repository(URL)


def nothing_imported() -> None:
    assert IssueClaim.objects.count() == 0
    assert GitHubProject.objects.count() == BoardItem.objects.count() == 0
    assert AgentRun.objects.count() == 0
    assert Event.objects.count() == 0


def refused(command: str, path, *extra: str) -> str:
    """Run the import; it must raise CommandError (no other exception) and
    leave the database as it was. Returns the message."""
    with pytest.raises(CommandError) as raised:
        call_command(command, str(path), *extra)
    message = str(raised.value)
    assert "Traceback" not in message
    assert len(message) < 3000, f"the error echoes the file: {len(message)} chars"
    nothing_imported()
    return message


def claims(tmp_path, data: bytes | str | dict) -> str:
    path = write(tmp_path / ".issue_claims.json", data)
    return refused("import_issue_claims", path, "--repository", URL)


def board(tmp_path, data: bytes | str | dict) -> str:
    path = write(tmp_path / ".github_project.json", data)
    return refused("import_github_project", path, "--repository", URL)


def sessions(tmp_path, data: bytes | str | dict) -> str:
    path = write(tmp_path / "session_1.jsonl", data)
    return refused("import_session_logs", path)


def write(path, data):
    if isinstance(data, dict | list):
        data = json.dumps(data, indent=2)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


# -- the same garbage, every importer -----------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "line", "what"), COMMON, ids=[c[0] for c in COMMON]
)
@pytest.mark.parametrize("importer", [claims, board, sessions])
def test_garbage_is_refused_with_the_line_and_nothing_imported(
    importer, name, data, line, what, tmp_path, repository
):
    message = importer(tmp_path, data)
    where = f"session_1.jsonl:{line}: " if importer is sessions else f"line {line}: "
    expected = {
        "json": "not JSON" if importer is sessions else "not valid JSON",
        "utf8": "not UTF-8 text",
        "deep": "nested too deeply",
    }[what]
    if what == "utf8":
        reading = "cannot read" if importer is sessions else "cannot read the file"
        where = f"{reading}: line {line}: "
    assert where in message and expected in message, message


def test_an_empty_file_is_refused_or_imports_nothing(tmp_path, repository, capsys):
    """An empty claims or board file is not JSON; an empty log has no lines."""
    assert "line 1: not valid JSON" in claims(tmp_path, b"")
    assert "line 1: not valid JSON" in board(tmp_path, b"")
    call_command("import_session_logs", str(write(tmp_path / "s.jsonl", b"")))
    assert "Imported 0 run(s)" in capsys.readouterr().out


@pytest.mark.parametrize("importer", [claims, board, sessions])
def test_a_directory_is_not_a_file(importer, tmp_path, repository):
    folder = tmp_path / "folder"
    folder.mkdir()
    command = {
        claims: ("import_issue_claims", "--repository", URL),
        board: ("import_github_project", "--repository", URL),
        sessions: ("import_session_logs",),
    }[importer]
    message = refused(command[0], folder, *command[1:])
    assert "is a directory" in message


@contextlib.contextmanager
def without_root():
    """Root reads any file: act as `nobody` for the read (effective uid only)."""
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(pwd.getpwnam("nobody").pw_uid)
    try:
        yield
    finally:
        os.seteuid(0)


@pytest.mark.parametrize("importer", [claims, board, sessions])
def test_an_unreadable_file_is_named(importer, tmp_path, repository):
    path = tmp_path / "locked.json"
    path.write_text(json.dumps({"42": CLAIM}))
    path.chmod(0)
    tmp_path.chmod(0o755)
    command = {
        claims: ("import_issue_claims", "--repository", URL),
        board: ("import_github_project", "--repository", URL),
        sessions: ("import_session_logs",),
    }[importer]
    with without_root(), pytest.raises(CommandError) as raised:
        call_command(command[0], str(path), *command[1:])
    assert "Permission denied" in str(raised.value)
    nothing_imported()


# -- claims ---------------------------------------------------------------------------


def test_claims_with_wrong_types_and_missing_fields_name_each(tmp_path, repository):
    text = json.dumps(
        {
            "42": {**CLAIM, "title": 5, "claimed_at": 12},
            "43": {},
            "44": "claimed",
            "²": CLAIM,
            "45": {**CLAIM, "failure_count": 10**30},
            "46": {**CLAIM, "failure_count": True},
            "47": {**CLAIM, "claimed_at": "9999-12-31T23:59:59"},
            "history": [],
        },
        indent=1,
    )
    message = claims(tmp_path, text)
    for expected in (
        "line 2: issue 42: claimed_at 12 is not an ISO 8601 datetime",
        "line 2: issue 42: title must be a string",
        "issue 43: session_id must be a non-empty string",
        "issue 43: claimed_at is required",
        "issue 43: title is required",
        "issue 44: must be an object",
        "claim key '²' is not an issue number",
        "issue 45: failure_count must be a whole number >= 0 (at most 32767)",
        "issue 46: failure_count must be a whole number",
        "issue 47: claimed_at '9999-12-31T23:59:59' is out of range",
        "history must be an object",
    ):
        assert expected in message, (expected, message)


def test_claims_with_control_characters_or_huge_values_are_refused(
    tmp_path, repository
):
    text = json.dumps(
        {
            "42": {**CLAIM, "session_id": "s\u0000id"},
            "43": {**CLAIM, "title": "bell\u0007"},
            "44": {**CLAIM, "session_id": HUGE},
            "history": {
                "45": {
                    "total_attempts": 1,
                    "successful_closes": 0,
                    "failure_reasons": ["nul\u0000"],
                }
            },
        },
        indent=1,
    )
    message = claims(tmp_path, text)
    assert "issue 42: session_id contains the control character U+0000" in message
    assert "issue 43: title contains the control character U+0007" in message
    assert "issue 44: session_id is longer than 200 characters" in message
    assert "history of issue 45: failure_reasons contains the control character" in (
        message
    )


def test_claims_with_a_bom_and_a_huge_title_import(tmp_path, repository):
    """A BOM is dropped; the title is cut to its column (documented)."""
    path = write(
        tmp_path / ".issue_claims.json",
        b"\xef\xbb\xbf" + json.dumps({"42": {**CLAIM, "title": HUGE}}).encode(),
    )
    call_command("import_issue_claims", str(path), "--repository", URL)
    claim = IssueClaim.objects.get()
    assert claim.title == "x" * 300


# -- the board ------------------------------------------------------------------------


def test_a_board_with_wrong_types_names_each_field(tmp_path, repository):
    data = {
        **PROJECT,
        "project_number": "one",
        "status_field_id": ["PVTSSF"],
        "status_options": {"Todo": 1, "In Progress": "p\u0000", "Done": "d"},
        "items": {
            "42": {"item_id": "PVTI_1", "status": ["Todo"], "added_at": "x"},
            "43": {"item_id": "PVTI_\u0007", "status": "Done"},
            "44": [],
        },
    }
    message = board(tmp_path, json.dumps(data, indent=1))
    for expected in (
        "project: project_number must be a whole number >= 1",
        "project: status_field_id must be a non-empty string",
        "status_options: 'Todo' must be an option id",
        "status_options: In Progress contains the control character U+0000",
        "item 42: status ['Todo'] is not one of Todo, In Progress, Done",
        "item 42: added_at 'x' is not an ISO 8601 datetime",
        "item 43: item_id contains the control character U+0007",
        "item 43: added_at is required",
        "item 44: must be an object",
    ):
        assert expected in message, (expected, message)


def test_a_board_with_a_huge_id_is_refused_without_echoing_it(tmp_path, repository):
    message = board(tmp_path, json.dumps({**PROJECT, "project_id": HUGE}))
    assert "project: project_id is longer than 100 characters" in message


# -- session logs ---------------------------------------------------------------------


def session_line(**changes) -> str:
    return json.dumps({**SESSION_LOG_EXAMPLE, **changes})


def test_session_logs_name_the_file_line_and_field(tmp_path):
    lines = [
        session_line(session_id="ok-1"),
        session_line(session_id="s\u0000"),
        session_line(session_id="ok-2", files_changed="5"),
        json.dumps({k: v for k, v in SESSION_LOG_EXAMPLE.items() if k != "tool_count"}),
        session_line(session_id="ok-3", tool_count=10**40),
        session_line(session_id="ok-4", warnings=["\u001b[31mred"]),
        session_line(session_id=HUGE),
        session_line(session_id="ok-5", started_at="0001-01-01T00:00:00+14:00"),
        "[1, 2]",
        "",
        "   ",
    ]
    message = sessions(tmp_path, "\n".join(lines))
    for expected in (
        "session_1.jsonl:2: session_id contains the control character U+0000",
        "session_1.jsonl:3: files_changed must be a whole number >= 0",
        "session_1.jsonl:4: missing tool_count",
        "session_1.jsonl:5: tool_count must be a whole number >= 0",
        "session_1.jsonl:6: warnings contains the control character U+001B",
        "session_1.jsonl:7: session_id is longer than 200 characters",
        "session_1.jsonl:8: started_at is out of range",
        "session_1.jsonl:9: not a JSON object",
    ):
        assert expected in message, (expected, message)
    assert "session_1.jsonl:1:" not in message


def test_one_bad_file_among_good_ones_imports_nothing(tmp_path):
    write(tmp_path / "session_1.jsonl", session_line(session_id="good"))
    write(tmp_path / "session_2.jsonl", b"\xff\xfe garbage")
    with pytest.raises(CommandError) as raised:
        call_command("import_session_logs", str(tmp_path / "session_*.jsonl"))
    assert "session_2.jsonl: cannot read: line 1: not UTF-8 text" in str(raised.value)
    nothing_imported()


def test_a_bom_and_unicode_line_separators_inside_strings_import(tmp_path):
    """U+2028, U+0085 and a form feed inside a JSON string do not end the line."""
    text = "\ufeff" + session_line(warnings=["a\u2028b\u0085c"]) + "\r\n"
    write(tmp_path / "session_1.jsonl", text)
    call_command("import_session_logs", str(tmp_path / "session_1.jsonl"))
    assert AgentRun.objects.get().session_id == SESSION_LOG_EXAMPLE["session_id"]


# -- what a person at the terminal sees ------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ("import_issue_claims", "--repository", URL),
        ("import_github_project", "--repository", URL),
        ("import_session_logs",),
    ],
    ids=lambda command: command[0],
)
def test_manage_py_prints_the_error_without_a_traceback_and_exits_1(command, tmp_path):
    """The file is read before the database is asked anything, so the process
    needs no database here."""
    path = write(tmp_path / "garbage.json", b"\x00\xff\xfe garbage")
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'unused.sqlite3'}",
        "CODEX_TESTING": "1",
        "CODEX_VAR_DIR": str(tmp_path),
    }
    completed = subprocess.run(
        [sys.executable, "manage.py", command[0], str(path), *command[1:]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    assert completed.stderr.startswith("CommandError: ")
    assert "line 1: not UTF-8 text" in completed.stderr
