"""Every notebook runs top to bottom in a fresh kernel, and then again in the same kernel.

nbval (run by scripts/test.sh) executes each notebook once; this test executes its code
cells twice in one kernel, which is what a learner does who presses "Run all" again.
"""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_twice_without_restart(path):
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    notebook.cells = code + [nbformat.v4.new_code_cell(cell.source) for cell in code]
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [out for cell in notebook.cells for out in cell.get("outputs", [])
              if out.get("output_type") == "error"]
    assert errors == []
