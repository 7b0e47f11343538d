"""Each role has budgets and a model of its own (defaults close to what
coding agents use), each overridable per role or for every role."""

from __future__ import annotations

from decimal import Decimal

from agents.budgets import ROLE_BUDGETS, Budget
from agents.roles import ROLES
from integrations.anthropic.client import ROLE_MODELS, max_output_tokens, model_for
from integrations.anthropic.pricing import DEFAULT_PRICES, FALLBACK_PRICE, price_for


def test_the_developer_gets_hundreds_of_steps_and_release_a_few(settings):
    developer = Budget.from_settings("developer")
    release = Budget.from_settings("release")
    assert developer.max_turns >= 200 and release.max_turns <= 15
    assert developer.max_cost_usd > release.max_cost_usd
    assert release.max_cost_usd == Decimal("0.50")
    assert developer.max_seconds == 3600
    assert set(ROLE_BUDGETS) == {role.name for role in ROLES.values()}


def test_a_roles_own_setting_beats_the_shared_one(settings):
    settings.CODEX_AGENT_MAX_TURNS = 20
    settings.CODEX_AGENT_MAX_TURNS_RELEASE = "5"
    settings.CODEX_AGENT_MAX_COST_USD_DEVELOPER = "2.5"
    assert Budget.from_settings("developer").max_turns == 20
    assert Budget.from_settings("release").max_turns == 5
    assert Budget.from_settings("developer").max_cost_usd == Decimal("2.5")
    # 0 for every role means: each role's default.
    settings.CODEX_AGENT_MAX_TURNS = 0
    assert Budget.from_settings("planner").max_turns == 100


def test_each_role_has_a_current_model_with_a_known_price(settings):
    settings.CODEX_MODEL = None
    for role in ROLES.values():
        model = model_for(role.name)
        assert model == ROLE_MODELS[role.name]
        assert model in DEFAULT_PRICES and price_for(model) != FALLBACK_PRICE
        assert max_output_tokens(model) >= 64_000
    assert model_for("planner") == "claude-opus-5-5"
    settings.CODEX_MODEL = "claude-sonnet-4-6"
    assert model_for("planner") == "claude-sonnet-4-6"
    settings.CODEX_MODEL_PLANNER = "claude-opus-5"
    assert model_for("planner") == "claude-opus-5"
