"""An offline workspace for the data-to-slides example: scripted provider, the example's answers, sample CSV.

Used by ``dominds plan-solve example data2ppt`` and ``dominds plan-solve serve`` when they do not run
inside a workspace (or with ``--scripted``). ``rtws-template/`` carries the same data:
``plan-solve/sales.csv.gz`` and the entries of ``scripted-responses.yaml`` in ``.minds/scripted/demo.yaml``
(tests/workflows/plan_solve/test_ps_demo.py checks both stay the same).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from dominds.rtws import Rtws
from dominds.workflows.plan_solve.example.sales_data import DATA_VERSION, write_sales_csv
from dominds.workflows.plan_solve.settings import DEFAULT_CSV

EXAMPLE_DIR = Path(__file__).resolve().parent
SCRIPTED_RESPONSES = EXAMPLE_DIR / "scripted-responses.yaml"
DEFAULT_QUESTION = "Analyse the 2024-2025 sales data and make a 3-slide presentation"

TEAM_YAML = """\
# The data-to-slides example: every member answers from .minds/scripted/demo.yaml (offline).
member_defaults:
  provider: scripted
  model: demo
  diligence_push_max: 0
"""

LLM_YAML = """\
providers:
  scripted:
    name: Scripted (offline example)
    apiType: scripted
    baseUrl: .minds/scripted
    apiKeyEnvVar: null
    models:
      demo: {name: Scripted example, context_length: 200000}
"""


def create_example_workspace(root: Path) -> Rtws:
    """Write the example workspace into ``root`` (created if needed) and return it."""
    rtws = Rtws(root.resolve())
    (rtws.minds_dir / "scripted").mkdir(parents=True, exist_ok=True)
    rtws.team_yaml.write_text(TEAM_YAML, encoding="utf-8")
    rtws.llm_yaml.write_text(LLM_YAML, encoding="utf-8")
    shutil.copyfile(SCRIPTED_RESPONSES, rtws.minds_dir / "scripted" / "demo.yaml")
    write_sales_csv(rtws.root / DEFAULT_CSV)
    rtws.ensure_layout()
    return rtws


def sample_csv() -> Path:
    """The sample data set as a file outside any workspace (written once per user to the temp folder)."""
    path = Path(tempfile.gettempdir()) / f"dominds-plan-solve-sample-{DATA_VERSION}" / DEFAULT_CSV.name
    if not path.is_file():
        write_sales_csv(path)
    return path
