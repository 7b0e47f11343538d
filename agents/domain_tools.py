"""The pipeline's own tools, next to the sandbox's: what an agent tells Codex
rather than does in the worktree (docs/domain/tasks.md#issue-pipeline,
docs/domain/fleet.md#agent-instance).

- `record_learning(type, content)`: a Learning for the task's repository,
  written under the role's issue-pipeline name (triage, analyst, writer, build,
  reviewer, committer); later tasks on the repository see it in their system
  prompt (see agents.phase_runner).
- `ask_question(to, question)`: an AgentQuestion from this role to another
  role or to "human". A question to a person also marks the run
  (`context.extra[HUMAN_QUESTIONS]`): the phase runner then ends the step with
  an escalation (needs_clarification) whatever the agent submits. A question
  to another role is answered by that role's agent (agents.answers: one short
  model call through the run's client, counted in the run's usage); the
  answer is the tool's result, written on the AgentQuestion (answered once)
  and logged as an event. At most MAX_ANSWERS_PER_RUN are answered per run;
  without a model client (direct calls) the question is only recorded.
- `request_review`, `create_pr` (the developer), `send_feedback` (QA and the
  reviewer): the status-updating tools (docs/domain/fleet.md#instance-status).
  They act on the run's agent
  instance (the one the task's running AgentRun is linked to, see
  agents.instances; else the newest not terminated, on the run's branch when
  there is one) and log a tool event on it with `status_updating=True` and the
  resulting status; without an instance they refuse with "no agent instance
  for this run".

Tools are `agents.tools.Tool`s, the format `Sandbox.tools()` returns: a bad
argument raises ToolError (an `is_error` result for the model), and every
call becomes a ToolRecord the runtime hands to the phase runner's `on_tool`,
like the sandbox's calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django_fsm import TransitionNotAllowed

from agents.answers import AnswerUnavailable, answer_question
from agents.prompts import strip_hidden
from agents.team import BY_TEAM_NAME, TEAM_NAMES, role_of, team_name
from agents.tools import Tool, ToolError, _schema
from codex.core.store import VersionConflict
from codex.events.models import Event, EventKind
from codex.fleet.models import AgentInstance, InstanceStatus, RunStatus
from codex.fleet.tool_events import record_tool_event
from codex.tasks.models import AgentQuestion, Learning, Role

if TYPE_CHECKING:
    from agents.roles.base import RoleContext

# context.extra key: the questions this run asked a person (the phase runner
# escalates when it is not empty).
HUMAN_QUESTIONS = "questions_for_human"
MAX_LEARNING_CHARS = 2000
MAX_QUESTION_CHARS = 4000
MAX_FEEDBACK_CHARS = 20_000
MAX_URL_CHARS = 500
LEARNING_TYPE = re.compile(r"^[a-z][a-z0-9_-]{0,49}$")
NO_INSTANCE = "no agent instance for this run"
# context.extra key: how many questions between roles this run had answered.
ANSWERED = "answered_questions"
MAX_ANSWERS_PER_RUN = 3
ANSWER_EXCERPT_CHARS = 2000
# Status tools, by the roles that have them: the agents checking the
# developer's work (QA, the reviewer) send it feedback. The developer has
# none: the runner itself opens the pull request and asks for the review, and
# tools claiming to would only mislead it.
STATUS_TOOLS = {
    Role.BUILD: ("send_feedback",),
    Role.REVIEWER: ("send_feedback",),
}


def _text(arguments: dict[str, Any], name: str, limit: int) -> str:
    """A required, non-empty string argument, cleaned and at most `limit` long."""
    value = arguments.get(name)
    if not isinstance(value, str):
        raise ToolError(f"{name} must be a string")
    value = strip_hidden(value).strip()
    if not value:
        raise ToolError(f"{name} must not be empty")
    if len(value) > limit:
        raise ToolError(
            f"{name} is {len(value)} characters; the limit is {limit}: shorten it"
        )
    return value


def _no_extra(arguments: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(arguments) - allowed)
    if unknown:
        raise ToolError(f"unknown argument(s): {', '.join(unknown)}")


class DomainTools:
    """The tools of one run of `role` on `context.task`."""

    def __init__(self, context: RoleContext, role: str) -> None:
        self.context = context
        self.task = context.task
        self.role = role

    @property
    def by(self) -> str:
        return f"agent:{self.role}"

    # -- learnings and questions --------------------------------------------

    def record_learning(self, arguments: dict[str, Any]) -> str:
        _no_extra(arguments, {"type", "content"})
        kind = arguments.get("type")
        if not isinstance(kind, str) or not LEARNING_TYPE.match(kind):
            raise ToolError(
                "type must be a short lowercase slug such as pattern_discovered "
                "(letters, digits, _ or -, at most 50 characters)"
            )
        content = _text(arguments, "content", MAX_LEARNING_CHARS)
        learning = Learning.objects.create(
            repository=self.task.repository,
            task=self.task,
            agent=self.role,
            type=kind,
            content=content,
        )
        return (
            f"learning {learning.pk} recorded; later tasks on this repository "
            "will see it"
        )

    def ask_question(self, arguments: dict[str, Any]) -> str:
        _no_extra(arguments, {"to", "question"})
        to = arguments.get("to")
        if to not in BY_TEAM_NAME:
            raise ToolError(f"to must be one of: {', '.join(BY_TEAM_NAME)}")
        to = BY_TEAM_NAME[to]
        if to == self.role:
            raise ToolError(
                f"you are the {team_name(self.role)}: ask another role or human"
            )
        question = _text(arguments, "question", MAX_QUESTION_CHARS)
        record = AgentQuestion.objects.create(
            task=self.task, from_role=self.role, to_role=to, question=question
        )
        if to == Role.HUMAN:
            self.context.extra.setdefault(HUMAN_QUESTIONS, []).append(question)
            return (
                "recorded and sent to a person; this phase stops and waits for "
                "the answer. Call no more tools except submit_result with what "
                "you have so far."
            )
        return self._answer(record)

    def _answer(self, record: AgentQuestion) -> str:
        """Have the target role's agent answer `record` (see agents.answers)."""
        to = record.to_role
        if self.context.client is None:
            return (
                "recorded for the team; no agent can answer in this run, so "
                "continue with your best judgement and say what you assumed"
            )
        answered = self.context.extra.get(ANSWERED, 0)
        if answered >= MAX_ANSWERS_PER_RUN:
            return (
                f"recorded, not answered: this run already had {answered} questions "
                "answered, the most it gets. Continue with your best judgement "
                "and say what you assumed."
            )
        try:
            answer = answer_question(
                self.context.client,
                self.task,
                asker=self.role,
                target=to,
                question=record.question,
            )
        except AnswerUnavailable as exc:
            if exc.response is not None:
                self.context.add_side_call(exc.response.usage, exc.response.cost_usd)
            Event.log(
                EventKind.TOOL,
                actor=f"agent:{to}",
                reason=f"the {self.role}'s question was not answered: {exc}"[:500],
                task=self.task,
                subject=f"question:{record.pk}",
                data={"question": record.pk, "from": self.role, "to": to},
            )
            raise ToolError(
                f"{exc}. The question is recorded; continue with your best "
                "judgement and say what you assumed."
            ) from None
        response = answer.response
        self.context.add_side_call(response.usage, response.cost_usd)
        self.context.extra[ANSWERED] = answered + 1
        record.record_answer(answer.text, by=f"agent:{to}")
        Event.log(
            EventKind.TOOL,
            actor=f"agent:{to}",
            reason=f"answered the {self.role}'s question",
            task=self.task,
            subject=f"question:{record.pk}",
            data={
                "question": record.pk,
                "from": self.role,
                "to": to,
                "answer": answer.text[:ANSWER_EXCERPT_CHARS],
                "model": response.model,
                **response.usage.as_dict(),
                "cost_usd": str(response.cost_usd),
            },
        )
        return f"The {team_name(to)} answers:\n{answer.text}"

    # -- the status-updating tools ----------------------------------------

    def instance(self) -> AgentInstance | None:
        """The task's agent instance for this run: the one the task's running
        AgentRun works through; else the newest one not terminated, preferring
        one on the run's branch."""
        instances = self.task.instances.exclude(
            status=InstanceStatus.TERMINATED
        ).order_by("-created_at", "-id")
        linked = instances.filter(runs__status=RunStatus.RUNNING).first()
        if linked is not None:
            return linked
        if self.context.branch:
            on_branch = instances.filter(branch_name=self.context.branch).first()
            if on_branch is not None:
                return on_branch
        return instances.first()

    def _transition(
        self, tool: str, action: str, metadata: dict[str, Any], **arguments: Any
    ) -> str:
        instance = self.instance()
        if instance is None:
            raise ToolError(NO_INSTANCE)
        try:
            instance.perform(action, by=self.by, **arguments)
        except (TransitionNotAllowed, VersionConflict) as exc:
            instance.refresh_from_db()
            error = (
                f"{tool} is not allowed for {instance.instance_id} in status "
                f"{instance.status}: {exc}"
            )
            record_tool_event(instance, tool, False, error=error, metadata=metadata)
            raise ToolError(error) from None
        record_tool_event(
            instance,
            tool,
            True,
            metadata=metadata,
            status_change=instance.status,
            status_updating=True,
        )
        return f"{instance.instance_id} is now {instance.status}"

    def request_review(self, arguments: dict[str, Any]) -> str:
        _no_extra(arguments, {"summary"})
        metadata = {}
        if "summary" in arguments:
            metadata["summary"] = _text(arguments, "summary", MAX_LEARNING_CHARS)
        return self._transition("request_review", "request_review", metadata)

    def create_pr(self, arguments: dict[str, Any]) -> str:
        _no_extra(arguments, {"pr_number", "pr_url"})
        number = arguments.get("pr_number")
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ToolError("pr_number must be a positive integer")
        url = arguments.get("pr_url", "")
        if not isinstance(url, str) or len(url) > MAX_URL_CHARS:
            raise ToolError(f"pr_url must be a string of at most {MAX_URL_CHARS}")
        url = url.strip()
        if url and not re.match(r"^(https?|file)://\S+$", url):
            raise ToolError("pr_url must be an http(s) or file URL without spaces")
        return self._transition(
            "create_pr",
            "create_pr",
            {"pr_number": number, "pr_url": url},
            pr_number=number,
            pr_url=url,
        )

    def send_feedback(self, arguments: dict[str, Any]) -> str:
        """Feedback for the instance's counterpart (a review for its coding
        agent). The state machine has no transition for it: the instance keeps
        its status, and the event is status-updating (a UI notification)."""
        _no_extra(arguments, {"feedback"})
        feedback = _text(arguments, "feedback", MAX_FEEDBACK_CHARS)
        instance = self.instance()
        if instance is None:
            raise ToolError(NO_INSTANCE)
        record_tool_event(
            instance,
            "send_feedback",
            True,
            metadata={"feedback": feedback[:MAX_LEARNING_CHARS]},
            status_change=instance.status,
            status_updating=True,
        )
        return f"feedback sent ({len(feedback)} characters)"

    # -- as model tools -----------------------------------------------------

    def tools(self) -> list[Tool]:
        """record_learning and ask_question for every role; the status
        tools for the roles in STATUS_TOOLS."""
        status_tools = STATUS_TOOLS.get(self.role, ())
        return [
            tool
            for tool in self._all_tools()
            if tool.name in ("record_learning", "ask_question")
            or tool.name in status_tools
        ]

    def _all_tools(self) -> list[Tool]:
        others = [name for role, name in TEAM_NAMES.items() if role != self.role]
        return [
            Tool(
                "record_learning",
                "Record something later tasks on this repository should know "
                "(a convention, a pitfall, a command that works). `type` is a "
                "short slug such as pattern_discovered; `content` at most "
                f"{MAX_LEARNING_CHARS} characters.",
                _schema(
                    {
                        "type": {"type": "string", "maxLength": 50},
                        "content": {"type": "string", "maxLength": MAX_LEARNING_CHARS},
                    },
                    ["type", "content"],
                ),
                _guarded(self.record_learning),
            ),
            Tool(
                "ask_question",
                "Ask another role or a person (to=human) a question. Another "
                "role's agent answers at once from the task's documents (the "
                f"answer is this tool's result; at most {MAX_ANSWERS_PER_RUN} per "
                "run). A question to a person stops this phase until it is "
                "answered: use it only when you cannot go on without an answer.",
                _schema(
                    {
                        "to": {"type": "string", "enum": others},
                        "question": {
                            "type": "string",
                            "maxLength": MAX_QUESTION_CHARS,
                        },
                    },
                    ["to", "question"],
                ),
                _guarded(self.ask_question),
            ),
            Tool(
                "request_review",
                "Ask for a review of your work (coding agents).",
                _schema({"summary": {"type": "string"}}),
                _guarded(self.request_review),
            ),
            Tool(
                "create_pr",
                "Report the pull request opened for this work.",
                _schema(
                    {
                        "pr_number": {"type": "integer", "minimum": 1},
                        "pr_url": {"type": "string"},
                    },
                    ["pr_number"],
                ),
                _guarded(self.create_pr),
            ),
            Tool(
                "send_feedback",
                "Send review feedback to the agent whose work you review.",
                _schema({"feedback": {"type": "string"}}, ["feedback"]),
                _guarded(self.send_feedback),
            ),
        ]


def _guarded(
    handler: Callable[[dict[str, Any]], str],
) -> Callable[[dict[str, Any]], str]:
    """Database validation errors are refusals the model can read, too."""

    def call(arguments: dict[str, Any]) -> str:
        try:
            return handler(arguments)
        except ValidationError as exc:
            raise ToolError("; ".join(exc.messages)) from None

    return call


def domain_tools(context: RoleContext, *, phase: str | None = None) -> list[Tool]:
    """The pipeline tools of a run on `context.task` in `phase` (default: the
    task's current phase), in the format of `Sandbox.tools()`."""
    return DomainTools(context, role_of(phase or context.task.phase)).tools()
