"""LLM providers: the provider catalog (built-in defaults overlaid by the rtws ``.minds/llm.yaml``),
resolution of a member's provider/model, and (later) the generators that talk to each API type."""
