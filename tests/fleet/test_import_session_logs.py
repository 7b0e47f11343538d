"""`manage.py import_session_logs`: spec 000's logs/session_*.jsonl as runs;
every bad line reported, nothing imported unless all are good."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command

from codex.events.models import Event, EventKind
from codex.fleet.models import AgentRun, RunStatus
from tests.fleet.factories import SESSION_LOG_EXAMPLE

pytestmark = pytest.mark.django_db


def write(path, *records):
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"
    )
    return path


def session(n, **changes):
    return {
        **SESSION_LOG_EXAMPLE,
        "session_id": f"session_20251217_143022_{n}",
        **changes,
    }


def test_the_spec_example_becomes_a_run(tmp_path, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    write(logs / "session_1.jsonl", SESSION_LOG_EXAMPLE)
    call_command("import_session_logs", str(logs / "session_*.jsonl"))
    run = AgentRun.objects.get()
    assert run.session_id == "session_20251217_143022_1"
    assert run.started_at == datetime(2025, 12, 17, 14, 30, 22, tzinfo=UTC)
    assert run.ended_at == datetime(2025, 12, 17, 15, 5, 47, tzinfo=UTC)
    assert (run.issues_worked, run.closed_issues, run.issues_closed) == (
        [42, 43],
        [42],
        1,
    )
    assert (run.files_changed, run.tool_count, run.status) == (
        5,
        45,
        RunStatus.SUCCEEDED,
    )
    assert round(run.productivity_score, 2) == 0.33
    assert run.imported_from.endswith("session_1.jsonl:1")
    assert Event.objects.get(kind=EventKind.RUN).subject == f"run:{run.session_id}"
    assert "Imported 1 run(s) from 1 file(s)" in capsys.readouterr().out


def test_an_unhealthy_session_is_a_failed_run(tmp_path):
    record = session(2, health_status="unhealthy", warnings=["crashed"])
    call_command("import_session_logs", str(write(tmp_path / "s.jsonl", record)))
    run = AgentRun.objects.get()
    assert (run.status, run.error, run.health_status) == (
        "failed",
        "crashed",
        "unhealthy",
    )


def test_every_bad_line_is_reported_and_nothing_is_imported(tmp_path):
    path = write(
        tmp_path / "session_x.jsonl",
        session(1),
        "{not json",
        {k: v for k, v in session(3).items() if k != "tool_count"},
        session(4, success=False),
        session(5, productivity_score=0.9),
        session(6, started_at="yesterday"),
        session(7, health_status="fine"),
        session(8, issues_closed=["42"], success=True),
        session(1),
    )
    with pytest.raises(CommandError) as failure:
        call_command("import_session_logs", str(path))
    message = str(failure.value)
    assert "nothing imported; 8 problem(s)" in message
    for line, why in [
        (2, "not JSON"),
        (3, "missing tool_count"),
        (4, "success must be true exactly when issues_closed is not empty"),
        (5, "productivity_score 0.9 is not"),
        (6, "started_at is not ISO8601"),
        (7, "health_status must be one of"),
        (8, "issues_closed must be a list of issue numbers"),
        (9, "session session_20251217_143022_1 already appears at"),
    ]:
        assert f"{path}:{line}: {why}" in message
    assert f"{path}:1: " not in message
    assert not AgentRun.objects.exists()
    assert not Event.objects.exists()


def test_a_pattern_matching_no_file_is_an_error(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_session_logs", str(tmp_path / "session_*.jsonl"))


def test_importing_again_skips_sessions_already_imported(tmp_path, capsys):
    path = write(tmp_path / "s.jsonl", session(1), "", session(2))
    call_command("import_session_logs", str(path))
    write(tmp_path / "t.jsonl", session(3))
    call_command("import_session_logs", str(path), str(tmp_path / "t.jsonl"))
    assert AgentRun.objects.count() == 3
    assert (
        "Imported 1 run(s) from 2 file(s); 2 already imported."
        in capsys.readouterr().out
    )
