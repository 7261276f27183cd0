# Sourced by bin/test and bin/dominds: create or refresh .venv from pyproject.toml.
# The venv is "stale" when pyproject.toml changed since the last install (hash stamp).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
STAMP="$VENV/.dominds-stamp"
want="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)-${DOMINDS_VENV_EXTRAS:-dev}"
if [ ! -x "$VENV/bin/python" ] || [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
    echo "dominds: preparing .venv from pyproject.toml (first run or pyproject changed)..." >&2
    PY="${PYTHON:-python3}"
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip >&2 || true
    "$VENV/bin/python" -m pip install --quiet -e "$ROOT[${DOMINDS_VENV_EXTRAS:-dev}]" >&2
    echo "$want" > "$STAMP"
fi
