"""`python -m agents.evaluation` (make eval): run the suite and write
var/eval/results.json and results.md. Scripted agents without
ANTHROPIC_API_KEY (or with --scripted); the configured models with it."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run the suite, print the table."""
    parser = argparse.ArgumentParser(prog="python -m agents.evaluation")
    parser.add_argument("--scripted", action="store_true", help="no model calls")
    parser.add_argument("--case", action="append", default=[], help="case id")
    parser.add_argument("--out", default="var/eval", help="results folder")
    arguments = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codex.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from agents.evaluation.runner import run_suite, table, write_report
    from codex.configuration.credentials import current_credential

    call_command("migrate", verbosity=0, interactive=False)
    scripted = arguments.scripted or not current_credential("claude")
    mode = "scripted" if scripted else "model"
    print(f"Evaluation ({mode}): {'scripted agents' if scripted else 'real models'}")
    out = Path(arguments.out)
    results = run_suite(out / "work", scripted=scripted, only=arguments.case)
    path = write_report(results, out, mode=mode)
    print(table(results))
    print(f"Written: {path} and {path.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
