"""Model prices (``pricing`` of a catalog model) and the cost of a generation.

Prices are USD per million tokens. Besides input and output, providers bill prompt-cache reads and
writes separately; writes with the long lifetime (Anthropic's one hour, OpenAI's twelve) cost more;
and some models bill a request whose prompt is long at higher rates, on every token of that request
(``long_context``: Claude Haiku 5.5 above 100K prompt tokens, OpenAI's GPT-6 models above 272K).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PRICE_NAMES = ("input", "output", "cache_read", "cache_write", "cache_write_long")


@dataclass(frozen=True)
class Rates:
    """One set of prices (USD per million tokens)."""

    input: float
    output: float
    cache_read: float | None = None
    """Prompt-cache reads; ``None`` = not billed separately (counted as input)."""
    cache_write: float | None = None
    """Prompt-cache writes (the short lifetime); ``None`` = not billed separately (counted as input)."""
    cache_write_long: float | None = None
    """Prompt-cache writes with the long lifetime; ``None`` = priced as ``cache_write``."""

    def cost_usd(
        self, input_tokens: int, output_tokens: int, cache_read_tokens: int, cache_write_tokens: int, long_writes: int
    ) -> float:
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        cache_write_long = cache_write if self.cache_write_long is None else self.cache_write_long
        long_writes = min(long_writes, cache_write_tokens)
        total = (
            input_tokens * self.input
            + output_tokens * self.output
            + cache_read_tokens * cache_read
            + (cache_write_tokens - long_writes) * cache_write
            + long_writes * cache_write_long
        )
        return total / 1_000_000


@dataclass(frozen=True)
class LongContextRates(Rates):
    threshold_tokens: int = 0
    """A request whose prompt (input + cache reads + cache writes) exceeds this pays these rates."""


@dataclass(frozen=True)
class ModelPricing(Rates):
    """A model's prices, with the rates of long requests when the model has them."""

    long_context: LongContextRates | None = None

    def cost_usd(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        long_writes: int = 0,
        *,
        per_request: bool = False,
    ) -> float:
        """Cost of tokens (``input_tokens`` excludes the cache tokens; ``long_writes`` are the part of
        ``cache_write_tokens`` written with the long lifetime).

        ``per_request=True`` when the counts are those of one request: its long-context tier applies.
        Counts added up over many requests get the base rates (a lower bound for long requests).
        """
        counts = (input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, long_writes)
        long = self.long_context
        if per_request and long is not None and input_tokens + cache_read_tokens + cache_write_tokens > long.threshold_tokens:
            return long.cost_usd(*counts)
        return Rates.cost_usd(self, *counts)


def parse_pricing(raw: object) -> ModelPricing | str:
    """A ``pricing`` mapping, or what is wrong with it."""
    expected = (
        "`pricing` must be {input, output, cache_read?, cache_write?, cache_write_long?, long_context?}, each "
        "price a non-negative number (USD per million tokens); long_context: {threshold_tokens, input, output, …}"
    )
    if not isinstance(raw, dict):
        return expected
    long_raw = raw.get("long_context")
    rates = _rates({k: v for k, v in raw.items() if k != "long_context"})
    if rates is None:
        return expected
    long = None
    if long_raw is not None:
        threshold = long_raw.get("threshold_tokens") if isinstance(long_raw, dict) else None
        long_rates = _rates({k: v for k, v in long_raw.items() if k != "threshold_tokens"}) if isinstance(long_raw, dict) else None
        if long_rates is None or not isinstance(threshold, int) or isinstance(threshold, bool) or threshold <= 0:
            return expected
        long = LongContextRates(**long_rates, threshold_tokens=threshold)
    return ModelPricing(**rates, long_context=long)


def _rates(raw: dict[str, Any]) -> dict[str, Any] | None:
    def price(value: Any) -> bool:
        return value is None or (isinstance(value, int | float) and not isinstance(value, bool) and value >= 0)

    if not set(raw) <= set(PRICE_NAMES) or not all(price(v) for v in raw.values()):
        return None
    if raw.get("input") is None or raw.get("output") is None:
        return None
    return {name: None if raw.get(name) is None else float(raw[name]) for name in PRICE_NAMES}
