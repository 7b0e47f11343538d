"""Every role's system prompt describes the tools the role has (COMMON_RULES),
and the tools offered match what it describes."""

from __future__ import annotations

import pytest

from agents.domain_tools import STATUS_TOOLS, domain_tools, role_of
from agents.roles import ROLES, RoleContext
from agents.roles.base import COMMON_RULES
from tests.factories import make_task

SANDBOX_TOOLS = (
    "list_files",
    "read_file",
    "search",
    "write_file",
    "edit_file",
    "delete_file",
    "move_file",
)


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("phase", list(ROLES))
def test_each_role_prompt_carries_the_common_rules(phase):
    prompt = ROLES[phase].system_prompt
    assert COMMON_RULES in prompt
    for tool in (*SANDBOX_TOOLS, "bash", "run_command", "submit_result"):
        assert tool in prompt
    for tool in ("record_learning(type, content)", "ask_question(to, question)"):
        assert tool in prompt
    # Who answers: another role's agent at once, a person by stopping the phase.
    assert "That role's agent answers at once" in flat(prompt)
    assert "to=human asks a person and stops this phase" in flat(prompt)


def test_the_rules_name_which_roles_have_the_status_tools():
    rules = flat(COMMON_RULES)
    assert "request_review" not in rules and "create_pr" not in rules
    assert "QA and the reviewer have send_feedback(feedback)" in rules
    assert "for the developer only, write_file, edit_file, multi_edit" in rules


@pytest.mark.django_db
@pytest.mark.parametrize("phase", list(ROLES))
def test_the_offered_tools_are_the_ones_described(phase):
    task = make_task()
    offered = {t.name for t in domain_tools(RoleContext(task=task), phase=phase)}
    expected = {
        "record_learning",
        "ask_question",
        *STATUS_TOOLS.get(role_of(phase), ()),
    }
    assert offered == expected
    for name in offered:
        assert name in COMMON_RULES
