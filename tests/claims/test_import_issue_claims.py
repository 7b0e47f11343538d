"""manage.py import_issue_claims: spec 000 §1's `.issue_claims.json`, with and
without failed_at/failure_count (its migration notes) and §7's history."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command

from codex.claims.models import ClaimState, IssueClaim
from codex.events.models import Event, EventKind
from tests.claims.factories import claimed
from tests.factories import make_repository

pytestmark = pytest.mark.django_db

URL = "https://github.com/acme/app"

SPEC_EXAMPLE = """{
  "42": {
    "session_id": "session_20251217_143022_1",
    "claimed_at": "2025-12-17T14:30:22.123456",
    "title": "Add user authentication",
    "failed_at": "2025-12-17T14:45:00.000000",
    "failure_count": 1
  }
}
"""

OLD_FORMAT = """{
  "42": {
    "session_id": "session_20251217_143022_1",
    "claimed_at": "2025-12-17T14:30:22.123456",
    "title": "Add user authentication"
  }
}
"""

HISTORY_EXAMPLE = """{
  "history": {
    "42": {
      "total_attempts": 3,
      "successful_closes": 1,
      "failure_reasons": ["content_filter", "timeout"],
      "last_session": "session_20251217_150000_1"
    }
  }
}
"""


@pytest.fixture
def repository():
    return make_repository(URL)


def run(tmp_path, text: str, *extra: str):
    path = tmp_path / ".issue_claims.json"
    path.write_text(text)
    call_command("import_issue_claims", str(path), "--repository", URL, *extra)


def test_the_specs_example_is_a_failed_claim_cooling_down(tmp_path, repository):
    run(tmp_path, SPEC_EXAMPLE)
    claim = IssueClaim.objects.get(repository=repository, number=42)
    failed_at = datetime(2025, 12, 17, 14, 45, tzinfo=UTC)
    assert claim.state == ClaimState.FAILED
    assert claim.claimed_by == "session_20251217_143022_1"
    assert claim.claimed_at == datetime(2025, 12, 17, 14, 30, 22, 123456, tzinfo=UTC)
    assert (claim.failure_count, claim.failed_at) == (1, failed_at)
    assert claim.expires_at == failed_at + timedelta(minutes=30)
    assert claim.title == "Add user authentication"
    event = Event.objects.get(subject="claim:acme/app#42")
    assert (event.kind, event.target) == (EventKind.CLAIM, "failed")


def test_the_old_format_defaults_failure_count_0_and_no_failed_at(tmp_path, repository):
    run(tmp_path, OLD_FORMAT)
    claim = IssueClaim.objects.get(repository=repository, number=42)
    assert claim.state == ClaimState.CLAIMED
    assert (claim.failure_count, claim.failed_at) == (0, None)
    assert claim.expires_at == claim.claimed_at + timedelta(minutes=30)
    assert (claim.total_attempts, claim.last_session) == (1, claim.claimed_by)


def test_3_failures_in_the_file_import_as_blocked(tmp_path, repository):
    entry = json.loads(SPEC_EXAMPLE)
    entry["42"]["failure_count"] = 3
    run(tmp_path, json.dumps(entry))
    assert IssueClaim.objects.get(number=42).state == ClaimState.BLOCKED


def test_the_history_extension_fills_the_claim_history(tmp_path, repository):
    run(tmp_path, HISTORY_EXAMPLE)
    claim = IssueClaim.objects.get(repository=repository, number=42)
    assert claim.state == ClaimState.UNCLAIMED
    assert (claim.total_attempts, claim.successful_closes) == (3, 1)
    assert claim.failure_reasons == ["content_filter", "timeout"]
    assert claim.last_session == "session_20251217_150000_1"


def test_claims_and_history_together(tmp_path, repository):
    both = {**json.loads(SPEC_EXAMPLE), **json.loads(HISTORY_EXAMPLE)}
    run(tmp_path, json.dumps(both, indent=2))
    claim = IssueClaim.objects.get(number=42)
    assert claim.state == ClaimState.FAILED
    assert claim.total_attempts == 3
    # The history entry's last_session is imported as written, not replaced by
    # the session that holds the claim ("last_session | string | No | Session
    # ID of last attempt").
    assert claim.last_session == "session_20251217_150000_1"
    assert claim.claimed_by == "session_20251217_143022_1"


def test_reimporting_replaces_the_rows_it_names(tmp_path, repository):
    claimed(repository, session_id="codex_session", number=42)
    run(tmp_path, OLD_FORMAT)
    claim = IssueClaim.objects.get(number=42)
    assert claim.claimed_by == "session_20251217_143022_1"
    assert IssueClaim.objects.count() == 1


def test_every_bad_entry_is_reported_with_its_line_and_nothing_is_imported(
    tmp_path, repository
):
    bad = """{
  "41": {
    "session_id": "session_ok",
    "claimed_at": "2025-12-17T14:30:22",
    "title": "Fine"
  },
  "42": {
    "session_id": "",
    "claimed_at": "yesterday",
    "title": "Bad"
  },
  "abc": {},
  "43": {
    "session_id": "s",
    "claimed_at": "2025-12-17T14:30:22",
    "failure_count": -1
  },
  "history": {
    "41": {"total_attempts": "three", "successful_closes": 0}
  }
}
"""
    with pytest.raises(CommandError) as error:
        run(tmp_path, bad)
    message = str(error.value)
    assert "nothing imported" in message
    assert "line 7: issue 42: session_id must be a non-empty string" in message
    assert "line 7: issue 42: claimed_at 'yesterday' is not an ISO 8601" in message
    assert "line 12: claim key 'abc' is not an issue number" in message
    assert "line 13: issue 43: title is required" in message
    assert "line 13: issue 43: failure_count must be a whole number >= 0" in message
    assert "line 19: history of issue 41: total_attempts must be" in message
    assert IssueClaim.objects.count() == 0
    assert Event.objects.filter(kind=EventKind.CLAIM).count() == 0


def test_invalid_json_is_reported_with_its_line(tmp_path, repository):
    with pytest.raises(CommandError, match=r"line 3: not valid JSON"):
        run(tmp_path, '{\n  "42": {\n    "session_id": ,\n  }\n}\n')


def test_an_unregistered_repository_is_refused(tmp_path, db):
    with pytest.raises(CommandError, match="not registered"):
        run(tmp_path, OLD_FORMAT)


def test_dry_run_validates_and_writes_nothing(tmp_path, repository, capsys):
    run(tmp_path, SPEC_EXAMPLE, "--dry-run")
    assert "would import 1 claim(s)" in capsys.readouterr().out
    assert IssueClaim.objects.count() == 0
