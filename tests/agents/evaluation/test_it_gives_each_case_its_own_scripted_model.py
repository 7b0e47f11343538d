"""One scripted model per case: each case's stub answers by phase and turn
from that case's conversation, so replies a case left unused never reach
the next one."""

from __future__ import annotations

import pytest

from agents.evaluation import runner
from agents.evaluation.cases import load_suite
from agents.evaluation.scripted import gold_script
from agents.evaluation.sources import Prepared
from agents.scripted_model import PhaseScript, message, submit
from tests.agents.evaluation.conftest import case_toml, make_release


def body(marker: str, answers: int) -> dict:
    """A request of the phase whose submit_result schema has `marker`, after
    `answers` answers of the model."""
    schema = {"properties": {marker: {"type": "string"}}}
    messages = [{"role": "user", "content": "go"}]
    for _ in range(answers):
        messages += [
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "more"},
        ]
    return {
        "tools": [{"name": "submit_result", "input_schema": schema}],
        "messages": messages,
    }


def test_a_phase_script_answers_by_phase_and_turn():
    script = PhaseScript(
        lambda: {
            "intake": [message("first"), submit({"a": 1})],
            "release": [submit({"b": 2})],
        }
    )

    first = script(body("should_proceed", 0))
    second = script(body("should_proceed", 1))
    release = script(body("release_notes", 0))
    over = script(body("release_notes", 1))
    unknown = script(body("nothing_known", 0))

    assert first.body["content"][0]["text"] == "first"
    assert second.body["content"][0]["input"] == {"a": 1}
    assert release.body["content"][0]["input"] == {"b": 2}
    assert over.status == 400 and "release turn 1" in over.body["error"]["message"]
    assert unknown.status == 400


def test_the_gold_developer_writes_and_deletes_what_the_reference_does(tmp_path):
    case = type("C", (), {"title": "T", "description": "D", "acceptance_criteria": ""})
    prepared = Prepared(
        case=case,
        bare=tmp_path,
        base_sha="0" * 40,
        patch="",
        test_patch="",
        gold_files={"new.py": "x = 1\n", "old.py": None},
    )

    (developer, _) = gold_script(prepared)()["implementation"]

    calls = [(b["name"], b["input"]) for b in developer.body["content"]]
    assert ("write_file", {"path": "new.py", "content": "x = 1\n"}) in calls
    assert ("delete_file", {"path": "old.py"}) in calls


@pytest.mark.django_db(transaction=True)
def test_a_case_that_stopped_early_leaves_nothing_for_the_next(
    tmp_path, venv_toolchain, monkeypatch
):
    folder = tmp_path / "suite"
    _, sha256 = make_release(folder)
    for name in ("a-first", "b-second"):
        (folder / f"{name}.toml").write_text(case_toml(sha256, case_id=name))
    made = []
    original = runner.model_stub

    def recorded(agent, prepared):
        stub = original(agent, prepared)
        made.append((prepared.case.id, stub))
        return stub

    monkeypatch.setattr(runner, "model_stub", recorded)
    cases = load_suite(folder)

    # The first stops at implementation (nothing written); the second is gold.
    first = runner.run_suite(
        cases[:1], agent="empty", root=tmp_path / "w1", cache=tmp_path / "c", out=print
    )
    second = runner.run_suite(
        cases[1:], agent="gold", root=tmp_path / "w2", cache=tmp_path / "c", out=print
    )

    assert not first[0].resolved and second[0].resolved, second[0].note
    (a_id, a_stub), (b_id, b_stub) = made
    assert (a_id, b_id) == ("a-first", "b-second") and a_stub is not b_stub
    # Each stub heard only its own task.
    for stub, case_id in ((a_stub, "a-first"), (b_stub, "b-second")):
        tasks = {_task_line(r.body) for r in stub.requests}
        assert len(tasks) == 1, (case_id, tasks)
        assert next(iter(tasks)).startswith("Task ")
    assert _task_line(a_stub.requests[0].body) != _task_line(b_stub.requests[0].body)


def _task_line(body: dict) -> str:
    content = body["messages"][0]["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    return text.lstrip().splitlines()[0]
