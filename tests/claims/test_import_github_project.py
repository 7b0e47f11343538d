"""manage.py import_github_project: spec 000 §3's `.github_project.json`, with
and without `items` (its migration notes)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command

from codex.claims.models import BoardItem, BoardStatus
from codex.github.models import GitHubProject
from tests.claims.factories import make_project
from tests.factories import make_repository

pytestmark = pytest.mark.django_db

URL = "https://github.com/acme/app"

SPEC_EXAMPLE = """{
  "project_id": "PVT_kwDOABC123",
  "project_number": 1,
  "status_field_id": "PVTSSF_abc123",
  "status_options": {
    "Todo": "98f5c...",
    "In Progress": "47d3e...",
    "Done": "f7a2b..."
  },
  "items": {
    "42": {
      "item_id": "PVTI_abc123",
      "status": "In Progress",
      "added_at": "2025-12-17T14:00:00",
      "updated_at": "2025-12-17T14:30:22"
    }
  }
}
"""


@pytest.fixture
def repository():
    return make_repository(URL)


def run(tmp_path, text: str, url: str = URL):
    path = tmp_path / ".github_project.json"
    path.write_text(text)
    call_command("import_github_project", str(path), "--repository", url)


def test_the_specs_example(tmp_path, repository):
    run(tmp_path, SPEC_EXAMPLE)
    project = GitHubProject.objects.get(repository=repository)
    assert (project.project_id, project.project_number) == ("PVT_kwDOABC123", 1)
    assert project.status_field_id == "PVTSSF_abc123"
    assert project.option_id(BoardStatus.IN_PROGRESS) == "47d3e..."
    item = BoardItem.objects.get(project=project, issue_number=42)
    assert (item.item_id, item.status) == ("PVTI_abc123", BoardStatus.IN_PROGRESS)
    assert item.added_at == datetime(2025, 12, 17, 14, 0, tzinfo=UTC)
    assert item.status_updated_at == datetime(2025, 12, 17, 14, 30, 22, tzinfo=UTC)
    item.perform("close", by="session:s1")  # imported items keep moving
    assert item.status == BoardStatus.DONE


def test_a_file_without_items_imports_an_empty_board(tmp_path, repository):
    data = json.loads(SPEC_EXAMPLE)
    del data["items"]
    run(tmp_path, json.dumps(data, indent=2))
    project = GitHubProject.objects.get(repository=repository)
    assert project.items.count() == 0


def test_reimporting_updates_the_board(tmp_path, repository):
    run(tmp_path, SPEC_EXAMPLE)
    data = json.loads(SPEC_EXAMPLE)
    data["items"]["42"]["status"] = "Done"
    data["status_field_id"] = "PVTSSF_new"
    run(tmp_path, json.dumps(data))
    assert GitHubProject.objects.get().status_field_id == "PVTSSF_new"
    assert BoardItem.objects.get().status == BoardStatus.DONE


def test_every_bad_entry_is_reported_with_its_line_and_nothing_is_imported(
    tmp_path, repository
):
    bad = """{
  "project_id": "PVT_kwDOABC123",
  "project_number": 0,
  "status_field_id": "PVTSSF_abc123",
  "status_options": {
    "Todo": "98f5c...",
    "Done": "f7a2b..."
  },
  "items": {
    "42": {"item_id": "PVTI_1", "status": "Doing", "added_at": "2025-12-17T14:00:00"},
    "43": {"item_id": "PVTI_2", "status": "Todo"},
    "44": {"item_id": "PVTI_1", "status": "Todo", "added_at": "2025-12-17T14:00:00"}
  }
}
"""
    with pytest.raises(CommandError) as error:
        run(tmp_path, bad)
    message = str(error.value)
    assert "line 3: project: project_number must be a whole number >= 1" in message
    assert "line 5: status_options: 'In Progress' must be an option id" in message
    assert "line 10: item 42: status 'Doing' is not one of Todo" in message
    assert "line 11: item 43: added_at is required" in message
    assert "line 12: item 44: item_id 'PVTI_1' is also item 42" in message
    assert GitHubProject.objects.count() == 0
    assert BoardItem.objects.count() == 0


def test_a_project_id_of_another_repositorys_board_is_refused(tmp_path, repository):
    make_project(project_id="PVT_kwDOABC123")
    with pytest.raises(CommandError, match="already the board of"):
        run(tmp_path, SPEC_EXAMPLE)
    assert not GitHubProject.objects.filter(repository=repository).exists()
