"""What a worker process needs before its first step, made once in the
cluster's sentinel before it forks its workers (CODEX_WORKER_WARM_UP, called
by codex.core.workers.cluster_recovery after it imported the phase runner): every
worker, the first ones and each one forked in place of a recycled or dead one,
starts with it instead of paying for it during a task's step.
"""

from __future__ import annotations

from contextlib import suppress
from importlib import import_module

from django.apps import apps
from django.urls import reverse
from django.utils.module_loading import import_string

from codex.repositories.forge import FORGES
from codex.tasks.models.transition_log import PROGRESS_JOB
from integrations.anthropic.client import tls_context
from integrations.anthropic.parsers import (
    load_http_transport,
    load_trace_propagators,
    prepare_response_parsers,
)

# Any id of the right shape: reverse() only needs it to match the route.
SAMPLE_TASK_ID = "FEAT-00000000-000000"


def prepare_worker() -> None:
    """Build the model SDK's response parsers and TLS context, import what
    its first request imports (the trace propagators, the HTTP transport),
    the forges, the job modules, and load the URL configuration (a step's
    progress comment links to the task page; the first reverse() of a process
    imports every view module). Where Python writes no bytecode
    (PYTHONDONTWRITEBYTECODE, as in the Docker image), a module first
    imported by a worker is compiled from source in each worker. The phase
    runner itself is imported by the cluster keeper (CODEX_PHASE_RUNNER) just
    before."""
    prepare_response_parsers()
    tls_context()
    load_trace_propagators()
    load_http_transport()
    for path in FORGES.values():
        import_string(path)
    for app in apps.get_app_configs():
        with suppress(ModuleNotFoundError):
            import_module(f"{app.name}.jobs")
    import_string(PROGRESS_JOB)  # the one job outside an app's jobs.py
    reverse("pages:task", args=[SAMPLE_TASK_ID])
