"""How a task moves: feedback loops, retries, intake, claims, CI, merges,
gates, spend caps, fan-out windows and the phase runner."""

from __future__ import annotations

from codex.env import env_bool, env_choice, env_int, env_str

# Bounded as their configuration keys (docs/domain/configuration.md).
CODEX_VERIFICATION_MAX_CYCLES = env_int(
    "CODEX_VERIFICATION_MAX_CYCLES", 3, minimum=1, maximum=3
)
CODEX_REVIEW_MAX_CYCLES = env_int("CODEX_REVIEW_MAX_CYCLES", 2, minimum=1, maximum=5)
CODEX_MAX_RETRIES = env_int("CODEX_MAX_RETRIES", 5, minimum=0)
CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY = env_bool(
    "CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY", False
)
# A claim not closed within its TTL becomes claimable again
# (docs/domain/claims.md#claim-ttl).
CODEX_CLAIM_TTL_MINUTES = env_int("CODEX_CLAIM_TTL_MINUTES", 30, minimum=1)
# The reviewer's comments are posted on the pull request (one review a cycle).
CODEX_REVIEW_POST_COMMENTS = env_bool("CODEX_REVIEW_POST_COMMENTS", True)
# CI of the pushed head: "pending" blocks and is checked again after this many
# seconds (at most CODEX_MAX_RETRIES times); "none" (no checks configured on
# GitHub) passes unless this is off, then a person decides.
CODEX_CI_PENDING_RETRY_SECONDS = env_int(
    "CODEX_CI_PENDING_RETRY_SECONDS", 300, minimum=10
)
CODEX_CI_NONE_PASSES = env_bool("CODEX_CI_NONE_PASSES", True)
CODEX_MERGE_METHOD = env_choice(
    "CODEX_MERGE_METHOD", "squash", ("squash", "merge", "rebase")
)
CODEX_RELEASE_REQUIRES_APPROVAL = env_bool("CODEX_RELEASE_REQUIRES_APPROVAL", False)
# Gates, steering and the progress comment (docs/gates.md).
CODEX_PLAN_LABEL = env_str("CODEX_PLAN_LABEL", "codex:plan")
CODEX_PLAN_MAX_CYCLES = env_int("CODEX_PLAN_MAX_CYCLES", 3, minimum=1)
CODEX_PROGRESS_MIN_SECONDS = env_int("CODEX_PROGRESS_MIN_SECONDS", 5, minimum=0)
# The console's address for links in comments (blank: links are paths).
CODEX_PUBLIC_URL = env_str("CODEX_PUBLIC_URL", "")
# Where `make run` serves the console (HOST:PORT, set by the Makefile): links
# printed outside a request name it when CODEX_PUBLIC_URL is blank.
CODEX_CONSOLE_ADDRESS = env_str("CODEX_CONSOLE_ADDRESS", "")
# The installation's monthly spend cap in USD (0: none); per repository: the
# console's Repository.monthly_cap_usd.
CODEX_MONTHLY_CAP_USD = env_int("CODEX_MONTHLY_CAP_USD", 0, minimum=0)
# How long a parent waits for its children's reports before the completion
# analysis runs on what arrived (docs/children.md).
CODEX_CHILDREN_WINDOW_MINUTES = env_int(
    "CODEX_CHILDREN_WINDOW_MINUTES", 10, minimum=1, maximum=7 * 24 * 60
)
CODEX_CHILDREN_ANALYSIS_TIMEOUT_MINUTES = env_int(
    "CODEX_CHILDREN_ANALYSIS_TIMEOUT_MINUTES", 8, minimum=1, maximum=24 * 60
)
CODEX_CHILDREN_CHILD_TIMEOUT_MINUTES = env_int(
    "CODEX_CHILDREN_CHILD_TIMEOUT_MINUTES", 8, minimum=1, maximum=7 * 24 * 60
)
# Agents by default: without ANTHROPIC_API_KEY a task blocks, saying so.
CODEX_PHASE_RUNNER = env_str(
    "CODEX_PHASE_RUNNER", "agents.phase_runner.AgentPhaseRunner"
)
# Called once in each worker cluster's sentinel before it forks its workers,
# so they start with the phase runner imported and its parsers built
# (agents/worker_warm_up.py); "" to skip.
CODEX_WORKER_WARM_UP = env_str(
    "CODEX_WORKER_WARM_UP", "agents.worker_warm_up.prepare_worker"
)
