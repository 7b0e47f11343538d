"""The export formats, key for key, as the formats write them
(docs/domain/tasks.md#exports), and `shape_errors`, which compares a document
with one: every key the format has, in its order, and no other; a key
written "?key" may be left out (the format shows it in one case only);
a list's items all have the shape of its one example; a leaf takes any value.

From the formats:

- task-envelope.yml: identity, request, state, `phases` (intake with
  agent_invocations and output_path, planning with output_paths,
  implementation with current_task, total_tasks, pr_url, branch, commits and
  no agent_invocations), feedback_loops, errors, escalations, updated_at,
  version, lease_holder;
- issue-state.json: version, issue, pipeline (blocked_reason and
  failure_reason in their error states), triage, analysis (test_requirement
  {required, type, location, description}), writer (changes [{file,
  description}]), build, review, commit, communication, learnings;
- verification-report.yml and review-report.yml.
"""

from __future__ import annotations

from typing import Any

LEAF = None

PHASE = {
    "status": LEAF,
    "?started_at": LEAF,
    "?completed_at": LEAF,
    "?agent_invocations": LEAF,
    "?output_paths": [LEAF],
}
LOOP = {"cycle_count": LEAF, "max_cycles": LEAF, "history": [LEAF]}

TASK_ENVELOPE = {
    "task_id": LEAF,
    "created_at": LEAF,
    "created_by": LEAF,
    "repository": LEAF,
    "request": {
        "title": LEAF,
        "description": LEAF,
        "priority": LEAF,
        "acceptance_criteria": LEAF,
    },
    "status": LEAF,
    "phase": LEAF,
    "current_agent": LEAF,
    "phases": {
        "intake": {
            "status": LEAF,
            "?started_at": LEAF,
            "?completed_at": LEAF,
            "?agent_invocations": LEAF,
            "?output_path": LEAF,
        },
        "planning": PHASE,
        "implementation": {
            "status": LEAF,
            "?started_at": LEAF,
            "?completed_at": LEAF,
            "?current_task": LEAF,
            "?total_tasks": LEAF,
            "?pr_url": LEAF,
            "?branch": LEAF,
            "?commits": [LEAF],
        },
        "verification": PHASE,
        "review": PHASE,
        "release": PHASE,
    },
    "feedback_loops": {"verification": LOOP, "review": LOOP},
    "errors": [
        {
            "timestamp": LEAF,
            "phase": LEAF,
            "exit_code": LEAF,
            "message": LEAF,
            "resolution": LEAF,
        }
    ],
    "escalations": [
        {
            "timestamp": LEAF,
            "phase": LEAF,
            "reason": LEAF,
            "questions": [LEAF],
            "resolved_at": LEAF,
            "resolution": LEAF,
        }
    ],
    "updated_at": LEAF,
    "version": LEAF,
    "lease_holder": LEAF,
}

ISSUE_STATE = {
    "version": LEAF,
    "issue": {
        "number": LEAF,
        "title": LEAF,
        "url": LEAF,
        "type": LEAF,
        "original_body": LEAF,
        "labels": [LEAF],
    },
    "pipeline": {
        "started_at": LEAF,
        "current_agent": LEAF,
        "attempt": LEAF,
        "max_attempts": LEAF,
        "status": LEAF,
        "?blocked_reason": LEAF,
        "?failure_reason": LEAF,
    },
    "triage": {
        "completed": LEAF,
        "scope": LEAF,
        "complexity": LEAF,
        "should_proceed": LEAF,
        "rejection_reason": LEAF,
    },
    "analysis": {
        "completed": LEAF,
        "files": [{"path": LEAF, "purpose": LEAF, "action": LEAF}],
        "patterns": [LEAF],
        "test_requirement": {
            "required": LEAF,
            "type": LEAF,
            "location": LEAF,
            "description": LEAF,
        },
        "must_do": [LEAF],
        "must_not_do": [LEAF],
        "brief": LEAF,
    },
    "writer": {
        "completed": LEAF,
        "attempt": LEAF,
        "changes": [{"file": LEAF, "description": LEAF}],
        "test_written": LEAF,
        "test_file": LEAF,
        "summary": LEAF,
        "previous_feedback": LEAF,
    },
    "build": {
        "completed": LEAF,
        "tests_passed": LEAF,
        "lint_passed": LEAF,
        "type_check_passed": LEAF,
        "errors": [LEAF],
        "commands_run": [{"command": LEAF, "exit_code": LEAF, "output": LEAF}],
    },
    "review": {
        "completed": LEAF,
        "verdict": LEAF,
        "findings": {
            "good": [LEAF],
            "issues": [{"file": LEAF, "line": LEAF, "issue": LEAF, "severity": LEAF}],
        },
        "feedback_for_writer": LEAF,
    },
    "commit": {
        "completed": LEAF,
        "hash": LEAF,
        "message": LEAF,
        "branch": LEAF,
        "pushed": LEAF,
        "pr_created": LEAF,
        "pr_url": LEAF,
        "issue_closed": LEAF,
    },
    "communication": {
        "questions": [
            {
                "from": LEAF,
                "to": LEAF,
                "question": LEAF,
                "answered": LEAF,
                "answer": LEAF,
            }
        ],
        "escalations": [
            {
                "agent": LEAF,
                "reason": LEAF,
                "requires_human": LEAF,
                "resolved": LEAF,
            }
        ],
    },
    "learnings": {
        "session_id": LEAF,
        "observations": [{"agent": LEAF, "type": LEAF, "content": LEAF}],
        "outcome": LEAF,
    },
}

VERIFICATION_REPORT = {
    "task_id": LEAF,
    "pr_url": LEAF,
    "created_at": LEAF,
    "cycle": LEAF,
    "test_results": {
        "summary": {"passed": LEAF, "failed": LEAF, "skipped": LEAF, "total": LEAF},
        "failures": [{"name": LEAF, "error": LEAF, "file": LEAF, "line": LEAF}],
    },
    "acceptance_criteria": [
        {"criterion": LEAF, "status": LEAF, "evidence": LEAF, "?issue_ref": LEAF}
    ],
    "recommendation": LEAF,
    "feedback": {
        "priority": LEAF,
        "summary": LEAF,
        "items": [
            {
                "severity": LEAF,
                "description": LEAF,
                "file": LEAF,
                "line": LEAF,
                "suggestion": LEAF,
            }
        ],
    },
}

REVIEW_REPORT = {
    "task_id": LEAF,
    "pr_url": LEAF,
    "created_at": LEAF,
    "cycle": LEAF,
    "assessment": LEAF,
    "comments": [
        {
            "id": LEAF,
            "severity": LEAF,
            "file": LEAF,
            "line": LEAF,
            "issue": LEAF,
            "suggestion": LEAF,
            "category": LEAF,
        }
    ],
    "security": {
        "vulnerabilities_found": LEAF,
        "items": [
            {
                "type": LEAF,
                "description": LEAF,
                "severity": LEAF,
                "file": LEAF,
                "line": LEAF,
            }
        ],
    },
    "feedback": {
        "blocking_count": LEAF,
        "suggestion_count": LEAF,
        "priority_order": [LEAF],
        "message": LEAF,
    },
}


def shape_errors(document: Any, shape: Any, path: str = "$") -> list[str]:
    """Where `document` departs from `shape` (see the module's docstring)."""
    if shape is LEAF:
        return []
    if isinstance(shape, list):
        if not isinstance(document, list):
            return [f"{path}: a list expected, found {type(document).__name__}"]
        errors = []
        for index, item in enumerate(document):
            errors += shape_errors(item, shape[0], f"{path}[{index}]")
        return errors
    if not isinstance(document, dict):
        return [f"{path}: an object expected, found {type(document).__name__}"]
    allowed = [key.removeprefix("?") for key in shape]
    required = [key for key in shape if not key.startswith("?")]
    errors = [f"{path}: {key} missing" for key in required if key not in document]
    errors += [
        f"{path}: {key} is not in the format" for key in document if key not in allowed
    ]
    present = [key for key in document if key in allowed]
    if present != [key for key in allowed if key in document]:
        errors.append(f"{path}: keys out of the format's order: {present}")
    for key, value in document.items():
        if key in allowed:
            child = shape[key] if key in shape else shape[f"?{key}"]
            errors += shape_errors(value, child, f"{path}.{key}")
    return errors
