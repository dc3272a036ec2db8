"""notebooks/extrapolation.ipynb runs against a store made here and draws from it."""

import os
import sqlite3
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from ccq_eval.store import Store

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "extrapolation.ipynb"


@pytest.fixture
def fixture_store(tmp_path):
    store = Store(tmp_path / "ccq.db")
    for label, base in (("GLA", 20.0), ("CCQ-GLA", 18.0)):
        run_id = store.writes.begin_run({"label": label, "model_spec": label, "weights_sha256": "w", "model_config": {},
                                         "ccq_overrides": {}, "dtype": "float32", "device": "cpu", "batch_size": 1,
                                         "seeds": {}, "command_line": "", "versions": {}})
        for corpus in ("pg19", "qasper"):
            for length in (4096, 8192, 12288):
                store.writes.write_unit({"run_id": run_id, "suite": "longppl", "task": f"longppl_{corpus}",
                                         "context_length": length, "unit_key": f"{label}{corpus}{length}", "status": "complete",
                                         "started": "2026-01-01", "finished": "2026-01-01", "settings": {}},
                                        [{"label": label, "model": label, "metric": "perplexity", "value": base + length / 4096,
                                          "n": 2, "higher_is_better": False, "is_primary": True}], [])
    return tmp_path / "ccq.db"


@pytest.mark.e2e
def test_extrapolation_notebook_executes(fixture_store, tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    os.environ["CCQ_EVAL_STORE"] = str(fixture_store)
    try:
        NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        del os.environ["CCQ_EVAL_STORE"]
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "PG19 4K" in html and "CCQ-GLA" in html and "21.0" in html  # the table, from this store
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the figure
    assert sqlite3.connect(fixture_store).execute("SELECT COUNT(*) FROM units").fetchone()[0] == 12
