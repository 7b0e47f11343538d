"""ClassifiedError is a frozen value; ClassifiedFailure raises it."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from codex.core.errors import (
    Action,
    ClassifiedError,
    ClassifiedFailure,
    classify_http,
)


def test_equal_classifications_are_equal_whatever_the_original():
    first = classify_http("github", 502, original=RuntimeError("one"))
    second = classify_http("github", 502, original=RuntimeError("two"))

    assert first == second
    assert hash(first) == hash(second)
    assert first.original_error == "one"


def test_it_is_frozen():
    error = classify_http("github", 401)

    with pytest.raises(dataclasses.FrozenInstanceError):
        error.action = Action.ABORT  # type: ignore[misc]


def test_raising_keeps_the_value_and_chains_the_original():
    original = ConnectionResetError("reset by peer")
    error = classify_http(
        "github", 503, headers={"retry-after": "4"}, original=original
    )

    with pytest.raises(ClassifiedFailure) as caught:
        error.raise_()

    assert caught.value.error is error
    assert caught.value.action is Action.WAIT_RETRY  # read through to the value
    assert caught.value.retry_after == 4
    assert caught.value.__cause__ is original
    assert "503" in str(caught.value)


def test_the_exception_survives_pickling():
    failure = ClassifiedFailure(classify_http("claude", 429))

    copy = pickle.loads(pickle.dumps(failure))

    assert isinstance(copy.error, ClassifiedError)
    assert copy.error == failure.error
