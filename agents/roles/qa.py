"""QA (verification): the phase runner runs the repository's test command for
real before the agent starts; the agent judges each acceptance criterion with
evidence; this module writes the verification report (spec 002 §4.4), in which
the real run's counts and failures overrule whatever the agent claimed."""

from __future__ import annotations

import re
from typing import Any

from agents.roles.base import COMMON_RULES, Role, RoleContext
from codex.tasks.runners import PhaseResult

SYSTEM_PROMPT = f"""\
You are the QA engineer of an autonomous software team. The repository's test
command has already been run on the pull request's code; its output is in the
task description. Check the change against spec.md: judge every acceptance
criterion (met or not, with evidence: a test, a file and line, a command's
output). You may run more commands. Recommend "approve" only when the tests
pass and every criterion is met; otherwise "request_changes" with feedback the
developer can act on, item by item.

{COMMON_RULES}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "acceptance_criteria": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "criterion": {"type": "string"},
                    "met": {"type": "boolean"},
                    "evidence": {"type": "string"},
                },
                "required": ["criterion", "met"],
            },
        },
        "recommendation": {"type": "string", "enum": ["approve", "request_changes"]},
        "summary": {"type": "string"},
        "feedback_items": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["acceptance_criteria", "recommendation", "summary"],
}

INSTRUCTIONS = "Verify the change and submit your verification."

_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)


def parse_pytest(output: str) -> dict[str, Any]:
    """Counts and failures from pytest's summary lines (-q or not)."""
    counts = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
    summary = ""
    for line in reversed(output.splitlines()):
        if _COUNT.search(line):
            summary = line
            break
    for number, word in _COUNT.findall(summary):
        key = {"errors": "error", "xfailed": "skipped", "xpassed": "passed"}.get(
            word, word
        )
        counts[key] += int(number)
    failures = [
        {"name": name, "error": (error or "").strip()[:1000]}
        for name, error in _FAILED.findall(output)
    ]
    return {
        "tests_passed": counts["passed"],
        "tests_failed": counts["failed"] + counts["error"],
        "tests_skipped": counts["skipped"],
        "tests_total": sum(counts.values()),
        "failures": failures,
    }


def to_phase_result(result: dict[str, Any], context: RoleContext) -> PhaseResult:
    run = parse_pytest(context.test_output)
    tests_ok = context.test_exit_code == 0
    criteria = list(result["acceptance_criteria"])
    recommendation = result["recommendation"]
    items = [str(item) for item in result.get("feedback_items") or []]
    if not tests_ok:
        recommendation = "request_changes"
        if not run["failures"]:
            run["failures"] = [
                {
                    "name": context.test_command,
                    "error": f"exit code {context.test_exit_code}: "
                    + context.test_output[-1500:],
                }
            ]
        items = [
            f"Fix failing test {f['name']}: {f['error']}".strip(": ")
            for f in run["failures"]
        ] + items
    if any(not c.get("met") for c in criteria):
        recommendation = "request_changes"
    verification: dict[str, Any] = {
        **run,
        "acceptance_criteria": criteria,
        "recommendation": recommendation,
        "feedback": {},
    }
    if recommendation == "request_changes":
        verification["feedback"] = {
            "priority": "high" if not tests_ok else "medium",
            "summary": result["summary"]
            if tests_ok
            else f"{run['tests_failed'] or 'some'} test(s) failed: {result['summary']}",
            "items": items,
            "test_command": context.test_command,
            "test_output": context.test_output[-4000:],
        }
    return PhaseResult(verification=verification)


ROLE = Role(
    name="qa",
    phase="verification",
    system_prompt=SYSTEM_PROMPT,
    schema=SCHEMA,
    to_phase_result=to_phase_result,
    instructions=INSTRUCTIONS,
)
