"""Every limit in the registry has the bounds its rule gives, and a value
outside is refused in the console with where the bound comes from
(docs/domain/configuration.md#configuration-keys):

- review iterations: "CHECK (review_iteration > 0 AND review_iteration <= 5)
  -- Max 5 review iterations", and a review cycle is one iteration, so
  `review.max_cycles` is 1 to 5 too;
- verification: "report-1.yml / report-2.yml / report-3.yml" and
  "cycle >= 3 → escalated": 1 to 3;
- the fan-out's "Child timeout: 8 minutes" is a key of its own.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from codex.configuration.models import Setting
from codex.configuration.registry import KEYS, InvalidSettingValue, ValueType

pytestmark = pytest.mark.django_db

ADD = reverse("admin:configuration_setting_add")
BOUNDS = {
    "review.max_iterations": (1, 5),
    "review.max_cycles": (1, 5),
    "verification.max_cycles": (1, 3),
    "children.child_timeout_minutes": (1, 7 * 24 * 60),
    "children.window_minutes": (1, 7 * 24 * 60),
    "children.analysis_timeout_minutes": (1, 24 * 60),
}


def test_every_integer_key_is_bounded_and_says_why():
    for entry in KEYS.values():
        if entry.type is ValueType.INTEGER:
            assert entry.minimum is not None, entry.key
            assert entry.why, entry.key
    for key, bounds in BOUNDS.items():
        assert (KEYS[key].minimum, KEYS[key].maximum) == bounds, key
    assert KEYS["children.child_timeout_minutes"].default == 8


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("review.max_cycles", "6", "a review cycle is one review iteration"),
        ("review.max_iterations", "6", "instance relationships' CHECK"),
        ("verification.max_cycles", "4", "report-1 to report-3"),
        ("children.child_timeout_minutes", "0", "1 minute to a week"),
    ],
)
def test_the_console_refuses_a_value_out_of_bounds_with_the_reason(
    console, key, value, reason
):
    response = console.post(ADD, {"key": key, "new_value": value})

    assert response.status_code == 200  # the form again, with the error
    html = response.content.decode()
    assert "is above the maximum" in html or "is below the minimum" in html
    assert reason in html.replace("&#x27;", "'")
    assert not Setting.objects.filter(key=key).exists()


def test_a_value_in_bounds_is_saved(console):
    response = console.post(ADD, {"key": "review.max_cycles", "new_value": "5"})
    assert response.status_code == 302
    assert Setting.objects.get(key="review.max_cycles").plaintext() == "5"


def test_the_environment_is_held_to_the_same_bounds(monkeypatch):
    from codex.configuration.config import get_config

    monkeypatch.setenv("CODEX_CHILDREN_CHILD_TIMEOUT_MINUTES", "0")
    with pytest.raises(InvalidSettingValue, match="1 minute to a week"):
        get_config(
            "children.child_timeout_minutes",
            environ={"CODEX_CHILDREN_CHILD_TIMEOUT_MINUTES": "0"},
        )
