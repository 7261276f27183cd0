"""The prices kept for the next start (``driver/price_sheet.py``) price exactly as the catalog they come from.

The front application lists dialogs before the configuration's modules are loaded, with the sheet the
last configuration load kept. A sheet that priced differently from the catalog in force would show a
wrong cost, and one whose fingerprint differed would make every kept tree's JSON be rebuilt: so the
sheet must give the same costs and the same fingerprint, and must not be used once anything the
catalog is made of changed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dominds.driver import price_sheet
from dominds.driver.config import ConfigCache
from dominds.driver.last_good import LastGood
from dominds.driver.usage import PriceSheet, price_generations, pricing_fingerprint
from dominds.llm.catalog_yaml import load_catalog
from dominds.llm.pricing import LongContextRates, ModelPricing
from dominds.rtws import Rtws

LLM_YAML = """\
providers:
  scripted:
    name: Scripted
    apiType: scripted
    baseUrl: .minds/scripted
    apiKeyEnvVar: null
    models:
      plain: {context_length: 200000, pricing: {input: 1.5, output: 2.25}}
      cached: {context_length: 200000, pricing: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75, cache_write_long: 6}}
      long: {context_length: 1000000, pricing: {input: 3, output: 15, long_context: {threshold_tokens: 200000, input: 6, output: 22.5}}}
      free: {context_length: 8000}
"""
GENERATIONS = [
    ["scripted/plain", 1000, 200, 0, 0, 0],
    ["scripted/cached", 5000, 300, 40000, 2000, 500],
    ["scripted/long", 150000, 1000, 60000, 0, 0],
    ["scripted/long", 1000, 1000, 0, 0, 0],
    ["scripted/free", 10, 10, 0, 0, 0],
    ["scripted/gone", 10, 10, 0, 0, 0],
    ["openai/gpt-5", 1000, 1000, 0, 0, 0],
]


def _workspace(root: Path) -> Rtws:
    rtws = Rtws(root)
    rtws.minds_dir.mkdir(parents=True)
    rtws.llm_yaml.write_text(LLM_YAML)
    rtws.ensure_layout()
    return rtws


def _config_loaded(rtws: Rtws) -> None:
    ConfigCache(rtws).get()  # what a daemon does at its first listing or drive


def test_the_kept_sheet_prices_and_fingerprints_as_the_catalog_in_force(tmp_path: Path) -> None:
    rtws = _workspace(tmp_path / "ws")
    _config_loaded(rtws)
    sheet = price_sheet.read(rtws)
    catalog, problems = load_catalog(rtws)
    assert sheet is not None and not problems
    assert pricing_fingerprint(sheet) == pricing_fingerprint(catalog)
    assert price_generations(GENERATIONS, sheet) == price_generations(GENERATIONS, catalog)
    assert price_generations(GENERATIONS, sheet).cost_usd > 0


def test_a_sheet_is_not_used_once_what_the_catalog_is_made_of_changed(tmp_path: Path) -> None:
    rtws = _workspace(tmp_path / "ws")
    _config_loaded(rtws)
    assert price_sheet.read(rtws) is not None
    rtws.llm_yaml.write_text(LLM_YAML.replace("input: 1.5", "input: 2.5"))
    assert price_sheet.read(rtws) is None, "llm.yaml edited"
    _config_loaded(rtws)
    assert price_sheet.read(rtws) is not None, "kept again by the next load"

    copy = LastGood(rtws).copy_of(rtws.llm_yaml)
    copy.write_text(copy.read_text() + "\n")
    assert price_sheet.read(rtws) is None, "the last good copy (used while llm.yaml has errors) changed"
    _config_loaded(rtws)

    rtws.llm_yaml.unlink()
    assert price_sheet.read(rtws) is None, "llm.yaml removed: built-in providers only"


def test_a_sheet_of_a_file_with_errors_prices_as_its_last_good_copy(tmp_path: Path) -> None:
    rtws = _workspace(tmp_path / "ws")
    _config_loaded(rtws)
    good = price_sheet.read(rtws)
    rtws.llm_yaml.write_text(LLM_YAML + "  broken: [\n")
    config = ConfigCache(rtws)
    catalog = config.get().catalog
    sheet = price_sheet.read(rtws)
    assert sheet is not None and good is not None
    assert pricing_fingerprint(sheet) == pricing_fingerprint(catalog) == pricing_fingerprint(good)


def test_a_torn_foreign_or_unreadable_sheet_is_not_used(tmp_path: Path) -> None:
    rtws = _workspace(tmp_path / "ws")
    _config_loaded(rtws)
    path = price_sheet.path(rtws)
    text = path.read_text()
    for damaged in (text[: len(text) // 2], "[]", '{"version": 1}', text.replace('"input":1.5', '"input":"cheap"'), ""):
        path.write_text(damaged)
        assert price_sheet.read(rtws) is None, damaged[:60]
    path.write_bytes(b"\xff\xfe\x00")
    assert price_sheet.read(rtws) is None


def test_a_read_only_state_directory_costs_the_sheet_only(tmp_path: Path) -> None:
    rtws = _workspace(tmp_path / "ws")
    rtws.cache_dir.mkdir()
    os.chmod(rtws.cache_dir, 0o500)
    try:
        _config_loaded(rtws)  # no error: the sheet is a cache
    finally:
        os.chmod(rtws.cache_dir, 0o700)
    if os.geteuid() != 0:  # root writes anyway
        assert price_sheet.read(rtws) is None


prices = st.floats(min_value=0, max_value=1e4, allow_nan=False, allow_infinity=False)
optional = st.none() | prices


@st.composite
def pricings(draw: st.DrawFn) -> ModelPricing:
    long = None
    if draw(st.booleans()):
        long = LongContextRates(draw(prices), draw(prices), draw(optional), draw(optional), draw(optional), draw(st.integers(1, 10**7)))
    return ModelPricing(draw(prices), draw(prices), draw(optional), draw(optional), draw(optional), long_context=long)


@settings(max_examples=150, deadline=None)
@given(models=st.dictionaries(st.tuples(st.sampled_from(["a", "b/c", ""]), st.text(max_size=8)), st.none() | pricings(), max_size=6))
def test_any_prices_come_back_from_the_sheet_as_they_were(models: dict[tuple[str, str], ModelPricing | None]) -> None:
    """The record keeps every price exactly (floats through JSON) and every (provider, model) key, even
    a model name with a slash or none; so the read sheet has the fingerprint of the one kept."""
    kept = PriceSheet(models)
    record = json.loads(json.dumps(price_sheet.sheet_record(kept, ["stamp"])))
    again = price_sheet.sheet_from_record(record, ["stamp"])
    assert again is not None
    assert again.fingerprint == kept.fingerprint
    assert {key: model.pricing for key, model in again.models.items()} == models
