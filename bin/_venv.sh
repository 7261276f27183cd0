# Sourced by bin/dominds and bin/test: create or refresh .venv from pyproject.toml.
#
# DOMINDS_VENV_EXTRAS names the optional dependencies wanted, comma-separated: bin/dominds wants "all"
# (the runtime and what the demo's workflows use); bin/test and the other scripts want "dev" (that, plus
# pytest, mypy, ruff, Playwright...).
# The stamp .venv/.dominds-stamp records the pyproject.toml hash and the extras installed:
# - pyproject.toml changed, or no stamp: `pip install -e .[extras]` (what is installed already is kept);
# - a wanted extra is missing: only that extra's packages are installed (the project is not rebuilt);
# - otherwise nothing happens. Extras stay once installed, so bin/test then bin/dominds installs nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${DOMINDS_VENV:-$ROOT/.venv}"  # bin/test-python keeps one venv per Python version beside it
STAMP="$VENV/.dominds-stamp"

_dominds_venv_refresh() {
    local hash wanted stamp stamped_hash installed current union missing extra
    hash="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
    wanted="${DOMINDS_VENV_EXTRAS-dev}"
    stamp=""
    if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ]; then
        stamp="$(cat "$STAMP")"
    fi
    case "$stamp" in
        "v2 "*) stamp="${stamp#v2 }"; stamped_hash="${stamp%% *}"; installed="${stamp#* }" ;;
        *-*) stamped_hash="${stamp%%-*}"; installed="${stamp#*-}" ;;  # the stamp of an earlier _venv.sh
        *) stamped_hash=""; installed="" ;;  # no venv or no stamp
    esac
    [ "$installed" = "-" ] && installed=""
    current=""
    [ -n "$stamped_hash" ] && [ "$stamped_hash" = "$hash" ] && current=yes
    union="$(_dominds_extras_union "$installed" "$wanted")"
    if [ -n "$current" ] && [ "$union" = "$installed" ]; then
        return 0
    fi
    local started=$SECONDS
    if [ ! -x "$VENV/bin/python" ]; then
        echo "dominds: creating .venv (first run)..." >&2
        "${PYTHON:-python3}" -m venv "$VENV"
        # a current pip resolves faster and quieter than the one a venv starts with
        "$VENV/bin/python" -m pip install --quiet --upgrade pip >&2 || true
    fi
    if [ -z "$current" ]; then
        echo "dominds: installing dominds${union:+ with [$union]} and its dependencies into .venv..." >&2
        # setuptools' "Editable installation ... be careful with folders named like your package" is about
        # this very checkout: a page of asterisks a newcomer cannot act on, so it is not shown
        PYTHONWARNINGS="ignore:Editable installation${PYTHONWARNINGS:+,$PYTHONWARNINGS}" \
            "$VENV/bin/python" -m pip install --quiet -e "$ROOT${union:+[$union]}" >&2
    else
        missing=""
        for extra in ${wanted//,/ }; do
            case ",$installed," in *",$extra,"*) ;; *) missing="$missing $extra" ;; esac
        done
        echo "dominds: adding the [${missing# }] dependencies to .venv..." >&2
        # shellcheck disable=SC2086
        "$VENV/bin/python" - "$ROOT/pyproject.toml" $missing >"$VENV/.dominds-extra-requirements.txt" <<'PY'
import re, sys, tomllib
extras = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]
def requirements(name, seen):
    # an extra may name others of this project (`dominds[plan-solve,embeddings]`): theirs, not the project
    for req in extras[name]:
        own = re.fullmatch(r"dominds\[([^\]]+)\]", req.strip())
        if own is None:
            yield req
        else:
            for other in own.group(1).split(","):
                if other.strip() not in seen:
                    seen.add(other.strip())
                    yield from requirements(other.strip(), seen)
print("\n".join(req for name in sys.argv[2:] for req in requirements(name, {name})))
PY
        "$VENV/bin/python" -m pip install --quiet -r "$VENV/.dominds-extra-requirements.txt" >&2
    fi
    echo "v2 $hash ${union:--}" > "$STAMP"
    echo "dominds: .venv ready ($((SECONDS - started)) s)" >&2
}

# The union of two comma-separated extra lists, sorted, comma-separated ("" when both are empty).
_dominds_extras_union() {
    printf '%s\n' ${1//,/ } ${2//,/ } | sed '/^$/d' | sort -u | paste -sd, -
}

_dominds_venv_refresh
