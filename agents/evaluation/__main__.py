"""`python -m agents.evaluation` (make eval): run a suite and write
results.json and results.md (docs/eval.md).

    python -m agents.evaluation --suite real --agent gold
    python -m agents.evaluation --cases ~/my-suite --agent model --repeat 3

The run keeps its own database and queue under var/eval/ (agents.isolation).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from agents.isolation import use_own_state


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(
        prog="python -m agents.evaluation",
        description="Run evaluation cases through the whole pipeline and judge them.",
    )
    where = parse.add_mutually_exclusive_group()
    where.add_argument("--suite", default="", help="a shipped suite (default: real)")
    where.add_argument("--cases", type=Path, help="a folder of case files")
    parse.add_argument("--case", action="append", default=[], help="only this case id")
    parse.add_argument("--tag", action="append", default=[], help="only cases tagged")
    parse.add_argument(
        "--agent",
        choices=("gold", "empty", "model"),
        help="gold: the reference patch through the pipeline (scripted); empty: "
        "no change (scripted); model: the configured Claude models (needs "
        "ANTHROPIC_API_KEY). Default: model with a key, else gold.",
    )
    parse.add_argument("--scripted", action="store_true", help="same as --agent gold")
    parse.add_argument("--repeat", type=int, default=1, help="runs of each case")
    parse.add_argument("--out", type=Path, help="results folder (default var/eval)")
    parse.add_argument(
        "--min-resolved",
        type=float,
        help="exit 1 when the resolved rate is below this (0-1)",
    )
    parse.add_argument(
        "--max-resolved",
        type=float,
        help="exit 1 when the resolved rate is above this (0-1)",
    )
    return parse


def egress_warnings(cases: list) -> list[str]:
    """The cases' setup hosts the setup proxy would refuse from this machine
    (they resolve to addresses that are not public and not among
    CODEX_SETUP_EGRESS_NETWORKS), said before the run rather than found in
    its notes."""
    import socket

    from agents.setup import operator_networks
    from integrations.jail.egress import EgressProxy

    allowed = (
        operator_networks().get("address_allowed")
        or (EgressProxy.__init__.__kwdefaults__["address_allowed"])
    )
    warnings = []
    for host in sorted({h for case in cases for h in case.setup_hosts}):
        try:
            addresses = {info[4][0] for info in socket.getaddrinfo(host, 443)}
        except OSError as exc:
            warnings.append(f"{host} does not resolve ({exc}): setups needing it fail")
            continue
        refused = sorted(a for a in addresses if not allowed(a))
        if refused:
            warnings.append(
                f"{host} resolves to {', '.join(refused)}, which the setup proxy "
                "refuses (not public); cases whose setup needs it will fail unless "
                "this machine's operator allows it: CODEX_SETUP_EGRESS_NETWORKS="
                + ",".join(f"{a}/32" for a in refused)
            )
    return warnings


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run the cases, write and print the results."""
    arguments = parser().parse_args(argv)
    if arguments.repeat < 1:
        parser().error("--repeat is at least 1")
    state = use_own_state("eval")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codex.settings")
    import django

    django.setup()
    from django.core.management import call_command

    # Its own database (agents.isolation): made or brought up to date first.
    call_command("migrate", verbosity=0, interactive=False)

    from agents.evaluation.cases import CaseError, choose, load_suite, suite_folder
    from agents.evaluation.results import summary, table, write_report
    from agents.evaluation.runner import run_suite
    from codex.configuration.credentials import current_credential

    agent = arguments.agent or ("gold" if arguments.scripted else "")
    if not agent:
        agent = "model" if current_credential("claude") else "gold"
    if agent == "model" and not current_credential("claude"):
        print("--agent model needs ANTHROPIC_API_KEY", file=sys.stderr)
        return 2
    try:
        folder = arguments.cases or suite_folder(arguments.suite or "real")
        cases = choose(load_suite(folder), arguments.case, arguments.tag)
    except CaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not cases:
        print("error: no case matches", file=sys.stderr)
        return 2
    for warning in egress_warnings(cases):
        print(f"WARNING: {warning}")
    kind = "SCRIPTED (no model is called)" if agent != "model" else "REAL MODELS"
    print(
        f"Eval: {len(cases)} case(s) from {folder}, agent {agent}, {kind}, "
        f"{arguments.repeat} run(s); state in {state}"
    )
    # Scratch of this process alone (worktrees, mirrors, the cases'
    # repositories): a second eval at the same time keeps its own.
    work = state / "work" / str(os.getpid())
    results = run_suite(
        cases,
        agent=agent,
        root=work,
        cache=state / "cache",
        repeat=arguments.repeat,
    )
    shutil.rmtree(work, ignore_errors=True)
    out = arguments.out or state
    path = write_report(results, out, agent=agent, suite=str(folder))
    print(table(results, agent=agent))
    print(f"Written: {path} and {path.with_suffix('.md')}")
    rate = summary(results)["resolved_rate"]
    if arguments.min_resolved is not None and rate < arguments.min_resolved:
        print(f"FAILED: resolved {rate:.2%} < {arguments.min_resolved:.2%}")
        return 1
    if arguments.max_resolved is not None and rate > arguments.max_resolved:
        print(f"FAILED: resolved {rate:.2%} > {arguments.max_resolved:.2%}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
