"""The Colab notebook: committed without outputs, and it runs top to bottom outside Colab at tiny
scale (nbclient), producing runs, tables and figures through the same commands as the CLI."""

import json

import nbformat
import pytest
from conftest import REPO
from nbclient import NotebookClient

NOTEBOOK = REPO / "colab" / "optbench_study.ipynb"


def test_the_committed_notebook_has_no_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code_cells and all(not cell.outputs and cell.execution_count is None for cell in code_cells)


def test_the_notebook_holds_no_training_logic():
    source = "\n".join(cell.source for cell in nbformat.read(NOTEBOOK, as_version=4).cells if cell.cell_type == "code")
    for entry_point in ("test_setup.py", "src/study.py", "src/aggregate.py"):
        assert entry_point in source
    assert "optbench.training.run" not in source.replace(
        "import optbench.training.run", ""
    )  # only an install check imports it


@pytest.mark.parametrize("with_mirror", [False, True, "mnist1d"], ids=["local", "mirrored", "workload"])
@pytest.mark.slow
@pytest.mark.extended
def test_the_notebook_runs_top_to_bottom_at_tiny_scale(tmp_path, monkeypatch, with_mirror):
    """With a mirror (Colab's layout: results on local disk, the mirror on Drive) the runs land in both, and
    the aggregator reads the mirror. With a workload chosen, the study's runs are that workload's."""
    results, mirror = tmp_path / "results", tmp_path / "drive" / "results"
    study, optimizers, seeds = "smoke", "sgd,lion", "0"
    datasets, extra = "synthetic", "model.width=8 dataset.train_size=400 dataset.test_size=100 dataset.val_size=100"
    if with_mirror == "mnist1d":  # a study of another workload: its dataset comes with the workload
        monkeypatch.setenv("NOTEBOOK_WORKLOAD", "mnist1d")
        study, optimizers, seeds, datasets, extra = "validation_half_lr", "", "0,1", "", "dataset.train_subset=200"
    elif with_mirror:
        monkeypatch.setenv("NOTEBOOK_MIRROR_DIR", str(mirror))
    else:  # one rung of a fidelity ladder (docs/fidelity.md): `study.py --rung` plans the same two runs
        monkeypatch.setenv("NOTEBOOK_RUNG", "epochs=1")
    for name, value in {
        "NOTEBOOK_STUDY": study,
        "NOTEBOOK_OPTIMIZERS": optimizers,
        "NOTEBOOK_SEEDS": seeds,
        "NOTEBOOK_DATASETS": datasets,
        "NOTEBOOK_EPOCHS": "1",
        "NOTEBOOK_EXTRA": f"{extra} batch_size=50 device=cpu",
        "NOTEBOOK_RESULTS_DIR": str(results),
        "NOTEBOOK_DATA_DIR": str(tmp_path / "data"),
        "OMP_NUM_THREADS": "1",
    }.items():
        monkeypatch.setenv(name, value)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    outputs = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert "Drive step skipped" in outputs
    assert with_mirror or "(rung epochs=1: " in outputs  # the study ran at the rung RUNG names
    mirrored = with_mirror is True
    for folder in (results, mirror) if mirrored else (results,):
        summaries = [path for path in sorted(folder.rglob("summary.json")) if "aggregate" not in path.parts]
        assert len(summaries) == 2 and all(json.loads(path.read_text())["status"] == "completed" for path in summaries)
        if with_mirror == "mnist1d":
            assert {json.loads(path.read_text())["workload"]["name"] for path in summaries} == {"mnist1d"}
    assert mirror.exists() == mirrored
    aggregate = (mirror if mirrored else results) / "aggregate"
    assert (aggregate / "summary.csv").exists() and (aggregate / "tables" / "results.md").exists()
    assert list((aggregate / "figures").glob("*.png")) and (aggregate / "report.md").exists()
    displayed = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert displayed  # the figures are shown inline
