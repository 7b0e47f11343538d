"""What blocks every task of the installation, from what the workers report.

Each worker cluster reports its machine with its beats (`worker_report`,
CODEX_WORKER_HEALTH, stored on codex.core.workers.clusters.WorkerCluster): whether
its command jail works (and the fix where it does not, right for a container
or a machine of its own), and whether it has a model key. From those reports
`installation_blockers` says, for the dashboard, the console and /metrics,
what stops every task at once: no worker beating, no worker able to jail
commands, no model key. The web server's own machine is never the judge: under
docker compose it has no jail and needs none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings

from codex.configuration.config import get_config
from codex.configuration.credentials import CREDENTIAL_KEYS, configured_credentials
from codex.core.workers import WorkerCluster
from integrations.anthropic.client import SOURCE as MODEL_SOURCE
from integrations.jail import unjailed_warning
from integrations.jail.health import jail_health

# The phase runner that needs a model key (CODEX_PHASE_RUNNER's default).
AGENT_RUNNER = "agents.phase_runner.AgentPhaseRunner"
ERROR = "error"
WARNING = "warning"
# Every Blocker.code, for a figure that names each whether it holds or not.
BLOCKER_CODES = ("no_worker", "no_jail", "no_model_key", "unjailed")


def worker_report() -> dict[str, Any]:
    """What a worker cluster reports of its machine (CODEX_WORKER_HEALTH):
    its jail's health, its phase runner and whether it has a model key."""
    return {
        "jail": jail_health().as_dict(),
        "phase_runner": settings.CODEX_PHASE_RUNNER,
        "model_key": bool(configured_credentials(MODEL_SOURCE)),
    }


@dataclass(frozen=True)
class Blocker:
    """One thing that stops every task (`error`) or weakens the installation
    (`warning`): what, the fix, and a stable `code` for alerts and tests."""

    code: str
    topic: str
    message: str
    fix: str = ""
    level: str = ERROR

    @property
    def text(self) -> str:
        return f"{self.message} Fix: {self.fix}." if self.fix else self.message


@dataclass(frozen=True)
class WorkerReport:
    """A beating cluster as the readiness rules read it."""

    cluster: WorkerCluster

    @property
    def jail(self) -> dict[str, Any]:
        return self.cluster.health.get("jail") or {}

    @property
    def jail_works(self) -> bool:
        return bool(self.jail) and not self.jail.get("problem")

    @property
    def needs_model_key(self) -> bool:
        return self.cluster.health.get("phase_runner", AGENT_RUNNER) == AGENT_RUNNER

    @property
    def has_model_key(self) -> bool:
        return bool(self.cluster.health.get("model_key"))


def beating_workers(now: datetime | None = None) -> list[WorkerReport]:
    """The clusters that beat now, with their reports (one query)."""
    clusters = WorkerCluster.objects.beating(now).order_by("host", "started_at")
    return [WorkerReport(cluster) for cluster in clusters]


def installation_blockers(
    workers: list[WorkerReport] | None = None,
) -> list[Blocker]:
    """What stops every task now, errors first. Jobs run inline (tests, a
    demo) have no workers: then this process's own jail and key count."""
    if settings.CODEX_RUN_JOBS_INLINE:
        return _inline_blockers()
    if workers is None:
        workers = beating_workers()
    blockers: list[Blocker] = []
    if not workers:
        blockers.append(
            Blocker(
                "no_worker",
                "Workers",
                "No worker is running: no task moves (no worker cluster has beaten "
                f"in the last {settings.CODEX_CLUSTER_STALE_SECONDS} seconds).",
                "start the workers: python manage.py codex_workers (`make run` "
                "starts one; under docker compose, the worker service)",
            )
        )
        # Nothing reports a jail; the setting turning it off is known here.
        if (settings.CODEX_SANDBOX or "").strip().lower() == "none":
            blockers.append(Blocker("unjailed", "Command jail", unjailed_warning()))
    else:
        blockers += _jail_blockers(workers)
    blockers += _model_key_blockers(workers)
    return sorted(blockers, key=lambda blocker: blocker.level != ERROR)


def _jail_blockers(workers: list[WorkerReport]) -> list[Blocker]:
    broken = [worker for worker in workers if not worker.jail_works]
    unjailed = [worker for worker in workers if worker.jail.get("backend") == "none"]
    blockers = []
    if unjailed:
        blockers.append(
            Blocker(
                "unjailed",
                "Command jail",
                "Commands of agents run UNJAILED on "
                f"{_hosts(unjailed)} (CODEX_SANDBOX=none): a prompt-injected "
                "issue can read the worker's secrets.",
            )
        )
    broken = [worker for worker in broken if worker not in unjailed]
    if not broken:
        return blockers
    first = broken[0].jail
    problem = first.get("problem") or "the worker has not reported its jail yet"
    fix = first.get("fix", "")
    if len(broken) == len(workers):
        message = f"No worker can run agents' commands: {problem}."
        level = ERROR
    else:
        message = (
            f"{len(broken)} of {len(workers)} workers cannot run agents' commands "
            f"({_hosts(broken)}): {problem}. Their tasks escalate."
        )
        level = WARNING
    blockers.append(Blocker("no_jail", "Command jail", message, fix, level))
    return blockers


def _model_key_blockers(workers: list[WorkerReport]) -> list[Blocker]:
    if workers:
        needing = [worker for worker in workers if worker.needs_model_key]
        if not needing or any(worker.has_model_key for worker in needing):
            return []
        # A key saved in the console reaches every worker at its next step;
        # their reports say so within CODEX_CLUSTER_HEALTH_SECONDS.
        if get_config(CREDENTIAL_KEYS[MODEL_SOURCE]):
            return []
        return [_no_model_key()]
    # No worker reports: this process's settings are the best guess.
    if settings.CODEX_PHASE_RUNNER != AGENT_RUNNER:
        return []
    return [] if configured_credentials(MODEL_SOURCE) else [_no_model_key()]


def _no_model_key() -> Blocker:
    return Blocker(
        "no_model_key",
        "Model key",
        "No model key: every task blocks at its first step (no agent backend "
        "configured).",
        "set ANTHROPIC_API_KEY for the workers, or save anthropic.api_key in the "
        "console (Configuration → Settings)",
    )


def _inline_blockers() -> list[Blocker]:
    """Jobs run in this process: its own jail and model key."""
    blockers = []
    warning = unjailed_warning()
    if warning:
        blockers.append(Blocker("no_jail", "Command jail", warning))
    if settings.CODEX_PHASE_RUNNER == AGENT_RUNNER and not configured_credentials(
        MODEL_SOURCE
    ):
        blockers.append(_no_model_key())
    return blockers


def _hosts(workers: list[WorkerReport]) -> str:
    names = sorted({worker.cluster.host for worker in workers})
    return ", ".join(names)
