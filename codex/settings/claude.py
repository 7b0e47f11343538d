"""Claude: the models of the roles, retries of model errors, and the
budgets of agent runs and tasks."""

from __future__ import annotations

from codex.env import env_amount, env_int, env_str
from codex.settings.base import VAR_DIR

# Claude (docs/architecture.md#integrations). ANTHROPIC_API_KEY is under
# CODEX_CREDENTIALS (integrations.py).
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL", "") or None
# Empty: each role's default model (integrations/anthropic/client.py
# ROLE_MODELS, in the README); set, one model for every role.
CODEX_MODEL = env_str("CODEX_MODEL", "") or None
# Per role: CODEX_MODEL_PRODUCT_MANAGER, _PLANNER, _DEVELOPER, _QA, _REVIEWER,
# _RELEASE; the role's thinking (CODEX_THINKING_<ROLE>: adaptive, a token
# budget, or off) and effort (CODEX_EFFORT_<ROLE>); the role's run budgets
# (CODEX_AGENT_MAX_TURNS_<ROLE>, _TOKENS_, _COST_USD_, _SECONDS_; agents/budgets.py
# ROLE_BUDGETS has the defaults). Empty: the role's default.
for _role in ("PRODUCT_MANAGER", "PLANNER", "DEVELOPER", "QA", "REVIEWER", "RELEASE"):
    for _name in (
        "MODEL",
        "THINKING",
        "EFFORT",
        "AGENT_MAX_TURNS",
        "AGENT_MAX_TOKENS",
        "AGENT_MAX_COST_USD",
        "AGENT_MAX_SECONDS",
    ):
        _key = f"CODEX_{_name}_{_role}"
        globals()[_key] = env_str(_key, "") or None
CODEX_MODEL_TIMEOUT_SECONDS = env_int("CODEX_MODEL_TIMEOUT_SECONDS", 300, minimum=5)
CODEX_MODEL_MAX_RETRIES = env_int("CODEX_MODEL_MAX_RETRIES", 0, minimum=0, maximum=1)
# A transient model error (429, 529, 5xx, lost connection) is retried inside the
# agent's conversation at most this many times per run, waiting at most this
# long each time; a longer retry-after requeues the step (agents/runtime.py).
CODEX_MODEL_INLINE_RETRIES = env_int("CODEX_MODEL_INLINE_RETRIES", 6, minimum=0)
CODEX_MODEL_INLINE_WAIT_SECONDS = env_int(
    "CODEX_MODEL_INLINE_WAIT_SECONDS", 30, minimum=1, maximum=300
)
CODEX_MODEL_PRICES: dict = {}  # {model: {"input": usd, "output": usd}} per 1M tokens
# One value for every role's run (0: each role's own default, ROLE_BUDGETS).
CODEX_AGENT_MAX_TURNS = env_int("CODEX_AGENT_MAX_TURNS", 0, minimum=0)
CODEX_AGENT_MAX_TOKENS = env_int("CODEX_AGENT_MAX_TOKENS", 0, minimum=0)
CODEX_AGENT_MAX_COST_USD = env_amount("CODEX_AGENT_MAX_COST_USD", "0")
CODEX_AGENT_MAX_SECONDS = env_int("CODEX_AGENT_MAX_SECONDS", 0, minimum=0)
# A task's budget across all its agent runs (0: no cap); a run starts with
# what is left, and a task with nothing left escalates.
CODEX_TASK_MAX_COST_USD = env_amount("CODEX_TASK_MAX_COST_USD", "50")
CODEX_TASK_MAX_TOKENS = env_int("CODEX_TASK_MAX_TOKENS", 0, minimum=0)
# How long QA's run of one check command may take, unless the repository
# says (Repository.check_timeout_seconds); agents' one-off commands keep
# CODEX_SANDBOX_COMMAND_TIMEOUT.
CODEX_CHECK_TIMEOUT_SECONDS = env_int(
    "CODEX_CHECK_TIMEOUT_SECONDS", 900, minimum=10, maximum=4 * 3600
)
# 0: each reply may use the model's whole output budget (streamed).
CODEX_AGENT_MAX_RESPONSE_TOKENS = env_int(
    "CODEX_AGENT_MAX_RESPONSE_TOKENS", 0, minimum=0
)
CODEX_AGENT_TOOL_OUTPUT_CHARS = env_int(
    "CODEX_AGENT_TOOL_OUTPUT_CHARS", 20_000, minimum=1000
)
CODEX_AGENT_CONTEXT_CHARS = env_int(
    "CODEX_AGENT_CONTEXT_CHARS", 400_000, minimum=50_000
)
# The same tool call with the same result and no file changed in between:
# a note to the agent at the first count, the run escalates at the second.
CODEX_AGENT_REPEAT_NOTE_AT = env_int("CODEX_AGENT_REPEAT_NOTE_AT", 4, minimum=2)
CODEX_AGENT_REPEAT_LIMIT = env_int("CODEX_AGENT_REPEAT_LIMIT", 8, minimum=3)
# How long a run's saved conversation may be resumed after its worker died.
CODEX_AGENT_CHECKPOINT_MAX_AGE_SECONDS = env_int(
    "CODEX_AGENT_CHECKPOINT_MAX_AGE_SECONDS", 86_400, minimum=60
)
# The repository map in the planner's and the developer's context
# (agents/repo_map): its size in tokens; 0 leaves it out.
CODEX_AGENT_REPO_MAP_TOKENS = env_int(
    "CODEX_AGENT_REPO_MAP_TOKENS", 2000, minimum=0, maximum=50_000
)
# Where the map's caches live (per file content, and per commit).
CODEX_REPO_MAP_CACHE_DIR = env_str(
    "CODEX_REPO_MAP_CACHE_DIR", str(VAR_DIR / "repo_map")
)
