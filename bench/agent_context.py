"""Figure 7: over a scripted 30-turn session through agents.runtime and the
real SDK against the loopback model stub, the share of input tokens the
request layout leaves uncached (the stub bills caching from cache_control).
The figure's other half, peak worker memory, is measured where workers run
real sessions: bench/pipeline.py, pipeline_worker_peak_rss_mb."""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.common import figure

SCHEMA = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "should_proceed": {"type": "boolean"},
    },
    "required": ["summary", "should_proceed"],
    "additionalProperties": False,
}


def run(smoke: bool) -> list[dict]:
    from agents.budgets import Budget
    from agents.runtime import run_agent
    from agents.sandbox import Sandbox
    from integrations.anthropic.client import ModelClient
    from tests.model_stub import ModelStub, message, submit, tool_use

    turns = 30
    with tempfile.TemporaryDirectory() as tmp, ModelStub() as stub:
        worktree = Path(tmp)
        for n in range(turns):
            (worktree / f"module_{n}.py").write_text(
                f"# module {n}\n" + "x = 1\n" * 600
            )
        stub.add(
            *[
                message(tool_use("read_file", {"path": f"module_{n}.py"}))
                for n in range(turns - 1)
            ],
            submit({"summary": "done", "should_proceed": True}),
        )
        client = ModelClient(
            api_key="sk-bench", base_url=stub.url, timeout=10, max_retries=0
        )
        try:
            outcome = run_agent(
                client,
                system="You are a bench agent.",
                prompt="Read every module.",
                result_schema=SCHEMA,
                tools=Sandbox(worktree, allowed_commands=[]).tools(),
                budget=Budget(),
                model="claude-sonnet-4-6",
            )
        finally:
            client.close()
        usages = stub.usages
    read = sum(u["cache_read_input_tokens"] for u in usages)
    written = sum(u["cache_creation_input_tokens"] for u in usages)
    plain = sum(u["input_tokens"] for u in usages)
    share = (plain + written) / max(plain + written + read, 1)
    return [
        figure(
            "agent_uncached_input_share",
            share * 100,
            "%",
            goal="<= 15 %",
            meets=outcome.ok and share <= 0.15,
            notes=f"{len(usages)} requests, outcome ok={outcome.ok}; tokens: "
            f"{plain} plain + {written} cache writes uncached, {read} cache reads",
        ),
    ]
