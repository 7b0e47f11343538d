"""`bench.run --only ... --merge`: the figures of the modules run replace
their namesakes in the last whole run's report, new ones are added, and each
says when it was measured; the rest keep their run's values."""

from __future__ import annotations

from bench.run import markdown, merged


def figure(name: str, value: float) -> dict:
    return {
        "name": name,
        "value": value,
        "unit": "ms",
        "ceiling": None,
        "ratio": None,
        "goal": "reported",
        "meets_goal": True,
        "notes": f"{name} notes",
    }


def report(figures: list[dict], started: str, mode: str = "full") -> dict:
    return {
        "mode": mode,
        "started_at": started,
        "seconds": 60.0,
        "machine": {"nproc": 2, "cpu": "x", "memory_gb": 4},
        "versions": {"python": "3.11", "django": "5.2", "postgresql": "15"},
        "figures": figures,
    }


def test_a_partial_run_replaces_its_figures_and_adds_new_ones():
    kept = report([figure("a", 1), figure("b", 2)], "2026-11-26T18:09:05+00:00")
    partial = report([figure("b", 3), figure("c", 4)], "2026-11-28T10:00:00+00:00")
    result = merged(kept, partial)
    assert [(f["name"], f["value"]) for f in result["figures"]] == [
        ("a", 1),
        ("b", 3),
        ("c", 4),
    ]
    assert "measured" not in result["figures"][0]
    assert result["figures"][1]["measured"].startswith("2026-11-28T10:00:00")
    assert result["started_at"] == kept["started_at"]
    text = markdown(result)
    assert "partial runs" in text and "**b** (measured 2026-11-28T10:00:00" in text
    assert "**a**: a notes" in text
