"""The task page and the dashboard as a browser lays them out: the outcome
(the pull request a link) above the artifacts, reports and timeline; the
timeline filtered by kind, rows arriving later too; words wrap between words,
never inside one, while a token too long for its column breaks inside it and
stays in; a two-digit count never wraps one digit a line."""

from __future__ import annotations

import pytest

from codex.events.models import Event
from tests.browser.conftest import LIVE_UPDATE_TIMEOUT_MS, screenshot
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db(transaction=True)

LONG_TOKEN = "/var/lib/codex/worktrees/" + "a-deeply-nested-folder/" * 8 + "file.py"
PROSE = (
    "verification requested changes because the acceptance criteria about "
    "multiplication were not demonstrated by any repository test"
)

# For each element: the words (runs without spaces, not the long token) whose
# text is laid out on more than one line.
BROKEN_WORDS = """
(selector) => {
  const broken = [];
  for (const cell of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /\\S+/g;
      let match;
      while ((match = re.exec(node.textContent))) {
        if (match[0].length > 30) continue;  // a long token may break
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set(
          Array.from(range.getClientRects(), (rect) => Math.round(rect.top))
        );
        if (tops.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
}
"""
# Cells whose content is wider than the cell (it would spill out).
SPILLING = """
(selector) => Array.from(document.querySelectorAll(selector))
  .filter((cell) => cell.scrollWidth > cell.clientWidth + 1)
  .map((cell) => cell.textContent.slice(0, 60))
"""


def a_task_with_a_story():
    task = put_in_state(
        make_task(title="Add multiplication"),
        status="in_progress",
        phase="verification",
        pr_url="https://github.com/acme/a-very-long-repository-name-for-wrapping/pull/7",
    )
    for number in range(3):
        Event.log(
            "tool", task=task, actor="worker:host:1", reason=f"read_file {number}"
        )
    Event.log("phase", task=task, actor="worker:host:1", reason=PROSE)
    Event.log("error", task=task, actor="worker:host:1", reason=f"{LONG_TOKEN} failed")
    return task


def test_the_outcome_leads_and_the_timeline_follows(signed_in, live_server):
    page = signed_in
    task = a_task_with_a_story()
    page.goto(f"{live_server.url}/tasks/{task.task_id}/")
    screenshot(page, "task-page-outcome-first")
    tops = {
        name: page.locator(f"#{name}").bounding_box()["y"]
        for name in ("status-block", "outcome", "artifacts", "timeline-card")
    }
    assert sorted(tops, key=tops.get) == [
        "status-block",
        "outcome",
        "artifacts",
        "timeline-card",
    ]
    link = page.locator("#outcome a#outcome-pr")
    assert link.get_attribute("href") == task.pr_url


def test_the_timeline_is_filtered_by_kind_also_as_it_grows(signed_in, live_server):
    page = signed_in
    task = a_task_with_a_story()
    page.goto(f"{live_server.url}/tasks/{task.task_id}/")
    page.select_option("#timeline-kind", "tool")
    visible = page.locator("#timeline tr:visible")
    assert visible.count() == 3
    assert set(
        page.locator("#timeline tr:visible").evaluate_all(
            "rows => rows.map((row) => row.dataset.kind)"
        )
    ) == {"tool"}
    screenshot(page, "task-page-timeline-tools-only")
    # A row that arrives while filtered is filtered too.
    rows = page.locator("#timeline tr").count()
    Event.log("tool", task=task, actor="worker:host:1", reason="read_file 4")
    Event.log("phase", task=task, actor="worker:host:1", reason="a later step")
    page.locator("#timeline tr").nth(rows + 1).wait_for(
        state="attached", timeout=LIVE_UPDATE_TIMEOUT_MS
    )
    assert visible.count() == 4
    page.select_option("#timeline-kind", "")
    assert page.locator("#timeline tr:visible").count() == rows + 2


@pytest.mark.parametrize("width", [1280, 720])
def test_words_wrap_whole_and_a_long_token_stays_in(signed_in, live_server, width):
    page = signed_in
    page.set_viewport_size({"width": width, "height": 900})
    task = a_task_with_a_story()
    page.goto(f"{live_server.url}/tasks/{task.task_id}/")
    screenshot(page, f"task-page-wrapping-{width}")
    # The actor is one token (worker:host:pid): it may break where it must.
    cells = "#timeline td:not(.actor), #status-content dd, #outcome dd"
    assert page.evaluate(BROKEN_WORDS, cells) == []
    assert page.evaluate(SPILLING, "#timeline td, #outcome dd") == []
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0


def test_two_digit_counts_stay_on_one_line(signed_in, live_server):
    page = signed_in
    for _ in range(12):
        put_in_state(make_task(), status="blocked", blocked_reason="forge down")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/dashboard/")
        screenshot(page, f"dashboard-counts-{width}")
        numbers = page.locator(".bars td.num, .number .value, .throughput .num")
        lines = numbers.evaluate_all(
            """cells => cells.map((cell) => {
                 const range = document.createRange();
                 range.selectNodeContents(cell);
                 const tops = new Set(Array.from(range.getClientRects(),
                   (rect) => Math.round(rect.top)));
                 return [cell.textContent.trim(), tops.size];
               })"""
        )
        assert ["12", 1] in lines, lines
        assert all(count == 1 for _, count in lines), (width, lines)
