"""The embedder kinds ``.minds/debate.yaml`` and ``dominds debate --embedder`` accept.

Apart from ``settings.py`` (which reads YAML and the host's thresholds) so that registering the CLI
command, for ``dominds --help``, imports nothing else.
"""

from __future__ import annotations

from typing import Literal

EmbedderKind = Literal["auto", "wordllama", "provider", "minilm", "jaccard"]
EMBEDDER_KINDS: tuple[EmbedderKind, ...] = ("auto", "wordllama", "provider", "minilm", "jaccard")
