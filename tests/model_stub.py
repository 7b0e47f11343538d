"""The tests' name for the demo's scripted model (agents/scripted_model.py).

The scripted Messages API is product code so that `manage.py demo` runs
without tests/; tests keep importing it from here.
"""

from agents.scripted_model import (  # noqa: F401 (re-exported for the tests)
    ERROR_TYPES,
    MAX_DELAY_SECONDS,
    ModelStub,
    PromptCache,
    Recorded,
    Reply,
    dropped,
    error,
    estimate_tokens,
    malformed_tool_use,
    message,
    segments,
    server_sent_events,
    submit,
    text,
    thinking,
    tool_use,
)
