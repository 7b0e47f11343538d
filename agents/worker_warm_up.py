"""What a worker process needs before its first step, made once in the
cluster's sentinel before it forks its workers (CODEX_WORKER_WARM_UP, called
by codex.core.cluster_recovery after it imported the phase runner): every
worker, the first ones and each one forked in place of a recycled or dead one,
starts with it instead of paying for it during a task's step.
"""

from __future__ import annotations

from django.urls import reverse

from integrations.anthropic.parsers import (
    load_trace_propagators,
    prepare_response_parsers,
)

# Any id of the right shape: reverse() only needs it to match the route.
SAMPLE_TASK_ID = "FEAT-00000000-000000"


def prepare_worker() -> None:
    """Build the model SDK's response parsers, import the trace propagators
    it loads on its first request, and load the URL configuration
    (a step's progress comment links to the task page; the first reverse() of
    a process imports every view module). The phase runner itself is imported
    by the cluster keeper (CODEX_PHASE_RUNNER) just before."""
    prepare_response_parsers()
    load_trace_propagators()
    reverse("pages:task", args=[SAMPLE_TASK_ID])
