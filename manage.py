#!/usr/bin/env python
"""Django's command-line utility for Codex."""

import os
import sys


def main() -> None:
    if sys.argv[1:2] == ["demo"]:
        # The demo keeps its own database and queue, never `make run`'s
        # (agents/isolation.py, docs/eval.md).
        from agents.isolation import use_own_state

        use_own_state("demo")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "codex.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
