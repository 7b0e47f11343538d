"""What an eval run reports: a row per case and run, the resolved rate with
its 95 % interval, and where the numbers came from (docs/eval.md#results).

Scripted agents spend nothing: their tokens are the stub's estimate and their
cost is what those tokens would cost, labelled simulated everywhere (the JSON's
`cost_kind`, the table's column), never shown as money spent.

With --repeat N the rate is the mean of the N runs' rates, with a Student's t
interval over them (N >= 2). With one run, the interval is Wilson's score
interval over the cases, which treats them as independent trials.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Two-sided 95 % quantiles of Student's t, by degrees of freedom.
_T95 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365,
    8: 2.306, 9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042,
}  # fmt: skip
Z95 = 1.96


@dataclass
class CaseResult:
    """One case, one run."""

    id: str
    project: str
    language: str
    run: int
    agent: str
    resolved: bool
    status: str
    judged: bool  # merged, and its tests ran
    fail_to_pass: int
    pass_to_pass: int
    fail_to_pass_passed: int
    pass_to_pass_failed: int
    cycles: int
    turns: int
    tokens: int
    cost_usd: float
    cost_kind: str  # simulated | real
    seconds: float
    note: str = ""


def t95(df: int) -> float:
    """The 95 % two-sided Student's t quantile: between tabulated degrees of
    freedom the smaller one's (a wider interval), above 30 the normal's."""
    if df > 30:
        return Z95
    known = max(k for k in _T95 if k <= df)
    return _T95[known]


def wilson(successes: int, trials: int) -> tuple[float, float]:
    """Wilson's 95 % score interval for a proportion."""
    if trials == 0:
        return (0.0, 0.0)
    p = successes / trials
    denominator = 1 + Z95**2 / trials
    centre = (p + Z95**2 / (2 * trials)) / denominator
    half = (
        Z95 * math.sqrt(p * (1 - p) / trials + Z95**2 / (4 * trials**2)) / denominator
    )
    return (max(0.0, centre - half), min(1.0, centre + half))


def summary(results: list[CaseResult]) -> dict[str, Any]:
    """The totals and the resolved rate with its interval."""
    runs = sorted({r.run for r in results})
    rates = []
    for run in runs:
        rows = [r for r in results if r.run == run]
        rates.append(sum(r.resolved for r in rows) / len(rows) if rows else 0.0)
    mean = statistics.fmean(rates) if rates else 0.0
    if len(rates) >= 2:
        half = t95(len(rates) - 1) * statistics.stdev(rates) / math.sqrt(len(rates))
        low, high = max(0.0, mean - half), min(1.0, mean + half)
        method = f"Student's t over {len(rates)} runs"
    else:
        low, high = wilson(sum(r.resolved for r in results), len(results))
        method = "Wilson score over the cases (one run)"
    kinds = sorted({r.cost_kind for r in results})
    return {
        "runs": len(runs),
        "cases": len({r.id for r in results}),
        "projects": sorted({r.project for r in results}),
        "languages": sorted({r.language for r in results}),
        "resolved": sum(r.resolved for r in results),
        "attempts": len(results),
        "resolved_rate": round(mean, 4),
        "run_rates": [round(rate, 4) for rate in rates],
        "interval_95": [round(low, 4), round(high, 4)],
        "interval_method": method,
        "turns": sum(r.turns for r in results),
        "tokens": sum(r.tokens for r in results),
        "cost_usd": round(sum(r.cost_usd for r in results), 4),
        "cost_kind": kinds[0] if len(kinds) == 1 else "mixed",
        "seconds": round(sum(r.seconds for r in results), 1),
    }


def _cost_header(kind: str) -> str:
    return "simulated cost $ (not spent)" if kind == "simulated" else "cost $"


def table(results: list[CaseResult], *, agent: str = "") -> str:
    """The results as Markdown: what ran, a row per case and run, the total."""
    total = summary(results)
    low, high = total["interval_95"]
    scripted = total["cost_kind"] == "simulated"
    head = [
        f"# Eval: agent {agent or '?'}"
        + (" (SCRIPTED: no model was called)" if scripted else ""),
        "",
        (
            f"Resolved {total['resolved']}/{total['attempts']} "
            f"({100 * total['resolved_rate']:.1f} %, 95 % interval "
            f"{100 * low:.1f}-{100 * high:.1f} %, "
            f"{total['interval_method']}); {total['cases']} cases from "
            f"{len(total['projects'])} projects in {', '.join(total['languages'])}."
        )
        if any(r.judged for r in results)
        else (
            f"Not judged here (the benchmark's own harness judges the predictions); "
            f"merged {sum(r.status.startswith('completed') for r in results)}/"
            f"{total['attempts']}."
        ),
        "",
    ]
    if scripted:
        head += [
            "Costs are simulated: the scripted model's token estimate priced as the "
            "configured model would be. Nothing was spent.",
            "",
        ]
    columns = (
        "| case | project | language | run | resolved | F2P | P2P | status | turns "
        f"| tokens | {_cost_header(total['cost_kind'])} | time s |"
    )
    lines = [*head, columns, "|---|---|---|---:|---|---:|---:|---|---:|---:|---:|---:|"]
    for r in results:
        f2p = f"{r.fail_to_pass_passed}" if r.judged else "-"
        p2p = f"{r.pass_to_pass - r.pass_to_pass_failed}" if r.judged else "-"
        lines.append(
            f"| {r.id} | {r.project} | {r.language} | {r.run} | "
            f"{'yes' if r.resolved else 'no'} | {f2p}/{r.fail_to_pass} | "
            f"{p2p}/{r.pass_to_pass} | {r.status} | {r.turns} | {r.tokens} | "
            f"{r.cost_usd:.4f} | {r.seconds} |"
        )
    lines.append(
        f"| total | | | | {total['resolved']}/{total['attempts']} | | | | "
        f"{total['turns']} | {total['tokens']} | {total['cost_usd']:.4f} | "
        f"{total['seconds']} |"
    )
    notes = [f"- {r.id} (run {r.run}): {r.note}" for r in results if r.note]
    if notes:
        lines += ["", "Not resolved, why:", *notes]
    return "\n".join(lines) + "\n"


def write_report(
    results: list[CaseResult], folder: Path, *, agent: str, suite: str
) -> Path:
    """results.json and results.md in `folder`; the JSON's path."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "agent": agent,
        "suite": suite,
        "scripted": all(r.cost_kind == "simulated" for r in results),
        "summary": summary(results),
        "cases": [asdict(r) for r in results],
    }
    path = folder / "results.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    (folder / "results.md").write_text(table(results, agent=agent))
    return path
