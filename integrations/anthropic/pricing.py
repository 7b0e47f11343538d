"""What a Messages API call costs: its token usage by how it is billed, the
price of each model, and the cost of a usage at a price."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings

PER_MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Price:
    """USD per million tokens of each kind."""

    input: Decimal
    output: Decimal
    cache_write: Decimal
    cache_read: Decimal

    @classmethod
    def from_base(cls, input_usd: str, output_usd: str) -> Price:
        """Anthropic's list-price rule: a 5-minute cache write costs 1.25 times the
        input price, a cache read a tenth of it."""
        base = Decimal(input_usd)
        return cls(
            input=base,
            output=Decimal(output_usd),
            cache_write=base * Decimal("1.25"),
            cache_read=base * Decimal("0.1"),
        )


# List prices (USD per million tokens). CODEX_MODEL_PRICES overrides or adds
# entries as {model: {"input": .., "output": .., "cache_write": ..,
# "cache_read": ..}}; check them against Anthropic's price page when moving up.
DEFAULT_PRICES: dict[str, Price] = {
    "claude-fable-5-1": Price.from_base("10", "50"),
    "claude-opus-5-5": Price.from_base("4", "20"),
    "claude-sonnet-5-5": Price.from_base("2", "10"),
    "claude-opus-5": Price.from_base("5", "25"),
    "claude-sonnet-5": Price.from_base("2", "10"),
    "claude-opus-4-6": Price.from_base("5", "25"),
    "claude-opus-4-5": Price.from_base("5", "25"),
    "claude-sonnet-4-6": Price.from_base("3", "15"),
    "claude-sonnet-4-5": Price.from_base("3", "15"),
    "claude-haiku-4-5": Price.from_base("1", "5"),
}
# A model missing from the table is priced high on purpose: an unknown price
# must make the cost cap stop a run early, never late.
FALLBACK_PRICE = Price.from_base("15", "75")


@dataclass(frozen=True)
class Usage:
    """Tokens of one call (or a sum of calls), by how they are billed."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
        )

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_write_tokens
            + self.cache_read_tokens
        )

    @property
    def prompt_tokens(self) -> int:
        """All input tokens of the request, cached or not."""
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens

    def as_dict(self) -> dict[str, int]:
        """The AgentRun field names (PhaseResult.metrics keys)."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_read_tokens": self.cache_read_tokens,
        }

    @classmethod
    def from_api(cls, usage: Any) -> Usage:
        """From the SDK's usage object (fields may be None on gateways)."""
        return cls(
            input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
            cache_write_tokens=int(
                getattr(usage, "cache_creation_input_tokens", 0) or 0
            ),
            cache_read_tokens=int(getattr(usage, "cache_read_input_tokens", 0) or 0),
        )


def _price_from_setting(value: Price | Mapping[str, Any]) -> Price:
    if isinstance(value, Price):
        return value
    base = Price.from_base(str(value["input"]), str(value["output"]))
    return Price(
        input=base.input,
        output=base.output,
        cache_write=Decimal(str(value.get("cache_write", base.cache_write))),
        cache_read=Decimal(str(value.get("cache_read", base.cache_read))),
    )


def price_table() -> dict[str, Price]:
    """DEFAULT_PRICES with the CODEX_MODEL_PRICES setting laid over it."""
    table = dict(DEFAULT_PRICES)
    for model, value in (getattr(settings, "CODEX_MODEL_PRICES", None) or {}).items():
        table[model] = _price_from_setting(value)
    return table


def price_for(model: str, table: Mapping[str, Price] | None = None) -> Price:
    """The price of `model`; a dated name (claude-x-20250101) falls back to its
    undated alias, and an unknown model to FALLBACK_PRICE."""
    prices = price_table() if table is None else table
    if model in prices:
        return prices[model]
    head, _, tail = model.rpartition("-")
    if head and tail.isdigit() and len(tail) == 8 and head in prices:
        return prices[head]
    return FALLBACK_PRICE


def cost_of(usage: Usage, price: Price) -> Decimal:
    """USD for `usage` at `price`, to the micro-dollar (AgentRun.cost_usd)."""
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_write_tokens * price.cache_write
        + usage.cache_read_tokens * price.cache_read
    ) / PER_MILLION
    return total.quantize(Decimal("0.000001"))
