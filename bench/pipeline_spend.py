"""Cost per merged pull request: the tokens and dollars Codex recorded for
the pipeline benchmark's completed tasks (each one merged pull request)."""

from __future__ import annotations

from bench.common import figure


def spend_per_merged_pr(ids: list[str]) -> dict:
    """Tokens and dollars the agent runs of the completed tasks among `ids`
    recorded (Codex's own accounting: the stub reports usage as the API does,
    cache writes and reads from cache_control; priced by Codex's table), per
    completed task: each completed task is one merged pull request."""
    from django.db.models import Count, Sum

    from codex.fleet.models import AgentRun

    sums = AgentRun.objects.filter(
        task__task_id__in=ids, task__status="completed"
    ).aggregate(
        tasks=Count("task", distinct=True),
        runs=Count("id"),
        input=Sum("input_tokens"),
        output=Sum("output_tokens"),
        cache_write=Sum("cache_write_tokens"),
        cache_read=Sum("cache_read_tokens"),
        cost=Sum("cost_usd"),
    )
    tasks = sums.pop("tasks") or 0
    return {
        "tasks": tasks,
        **{k: float(v or 0) / tasks if tasks else 0.0 for k, v in sums.items()},
    }


def spend_figures(results: list[dict]) -> list[dict]:
    """Tokens and dollars per merged pull request over every run's completed
    tasks: the demo's scripted conversation (agents.demo) with prompt caching,
    as Codex recorded it."""
    tasks = sum(r["spend"]["tasks"] for r in results)
    if not tasks:
        return []

    def total(key: str) -> float:
        return sum(r["spend"][key] * r["spend"]["tasks"] for r in results) / tasks

    tokens = {k: total(k) for k in ("input", "output", "cache_write", "cache_read")}
    uncached = tokens["input"] + tokens["cache_write"]
    inputs = uncached + tokens["cache_read"]
    detail = (
        f"{tasks} merged pull requests (completed tasks), {total('runs'):.1f} agent "
        f"runs each; tokens per pull request: {tokens['input']:.0f} input, "
        f"{tokens['cache_write']:.0f} cache writes, {tokens['cache_read']:.0f} "
        f"cache reads, {tokens['output']:.0f} output "
        f"({(uncached / inputs * 100) if inputs else 0:.1f}% of input uncached); "
        "priced by Codex's own table for the roles' default models; the "
        "scripted conversation is short (a few turns per phase): a real model "
        "on a real change reads and writes far more"
    )
    return [
        figure(
            "cost_per_merged_pull_request_usd",
            total("cost"),
            "USD",
            goal="reported (other agent systems' published figures beside it in "
            "the commentary, as context only)",
            meets=True,
            notes=detail,
        ),
        figure(
            "tokens_per_merged_pull_request",
            sum(tokens.values()),
            "tokens",
            goal="reported",
            meets=True,
            notes=detail,
            **{f"{k}_tokens": round(v) for k, v in tokens.items()},
        ),
    ]
