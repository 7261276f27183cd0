"""LLM providers: the provider catalog (built-in defaults overlaid by the rtws ``.minds/llm.yaml``),
resolution of a member's provider/model, and (later) the generators that talk to each API type."""

from pathlib import Path

BUILTIN_CATALOG_PATH = Path(__file__).with_name("defaults.yaml")
"""The built-in providers and models (``catalog_yaml.py`` reads it; ``driver/price_sheet.py`` stamps it)."""
