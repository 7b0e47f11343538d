"""Runs that keep their own state: the eval and the demo (docs/eval.md#own-state).

Called before Django is set up, `use_own_state("eval")` points this process
at a folder of its own under the var folder (CODEX_VAR_DIR, else var/):
its SQLite database, its job queue (the ORM broker lives in that database)
and its keys are there, never in the database `make run` uses. DATABASE_URL
and REDIS_URL are dropped for the process, so neither a configured
PostgreSQL nor a shared Redis queue is reached: a running worker never sees
these runs' tasks or jobs, and the dashboard's figures stay those of real
work. Nothing here imports Django.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

MARK = "CODEX_OWN_STATE"
NAMES = ("eval", "demo")
DROPPED = ("DATABASE_URL", "REDIS_URL")


def default_var_dir(environ: MutableMapping[str, str]) -> Path:
    """The var folder `make run` uses (codex/settings/base.py's VAR_DIR)."""
    configured = environ.get("CODEX_VAR_DIR", "")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parent.parent / "var"


def use_own_state(name: str, environ: MutableMapping[str, str] | None = None) -> Path:
    """Point this process at <var>/<name>/ (module docstring); its folder.
    Again in a process already pointed there (a child of it), nothing moves."""
    if name not in NAMES:
        raise ValueError(f"no own state named {name!r}")
    environ = os.environ if environ is None else environ
    if environ.get(MARK) == name:
        return Path(environ["CODEX_VAR_DIR"])
    folder = (default_var_dir(environ) / name).absolute()
    folder.mkdir(parents=True, exist_ok=True)
    environ["CODEX_VAR_DIR"] = str(folder)
    for variable in DROPPED:
        environ.pop(variable, None)
    environ[MARK] = name
    return folder


def own_state(environ: MutableMapping[str, str] | None = None) -> str:
    """The name of the own state this process runs in, "" for none."""
    environ = os.environ if environ is None else environ
    return environ.get(MARK, "")
