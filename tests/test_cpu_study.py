"""The published CPU study (docs/cpu-study): every number comes from the runs, none is typed by hand.

- docs/cpu-study/runs holds the study's run records (scripts/publish_runs.py); aggregating them again
  gives exactly the committed tables;
- README's block is copied from those tables (tables/results.csv, tables/verdicts.csv) by scripts/readme_study.py.
"""

import importlib.util

import pytest
from conftest import REPO

spec = importlib.util.spec_from_file_location("readme_study", REPO / "scripts" / "readme_study.py")
readme_study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(readme_study)

STUDY_DOCS = REPO / "docs" / "cpu-study"
TARGET_ACC = 0.5  # README's aggregate line: --target-acc 0.5


def test_committed_tables_are_what_the_committed_runs_give(tmp_path):
    from optbench.analysis import aggregate

    outcome = aggregate(STUDY_DOCS / "runs", tmp_path, TARGET_ACC, REPO / "experiments", draw_figures=False)
    assert outcome.runs == 44  # clean: 6 seeds of sgd, adam, muon, 10 of adamw, lion; 2 x 3 noisy; trials set aside
    committed = sorted(path.relative_to(STUDY_DOCS) for path in STUDY_DOCS.glob("tables/*.csv"))
    assert committed == sorted(path.relative_to(tmp_path) for path in tmp_path.glob("tables/*.csv"))
    for table in [*committed, "summary.csv"]:
        assert (tmp_path / table).read_text() == (STUDY_DOCS / table).read_text(), table


def test_readme_block_is_the_one_the_committed_docs_give(capsys):
    current = readme_study.README.read_text()
    wanted = readme_study.with_block(current, readme_study.study_block())
    assert current == wanted, "README's cpu-study block is stale: run python scripts/readme_study.py"
    assert readme_study.main(["--check"]) == 0, capsys.readouterr().err  # the command CI and docs name agrees


def test_a_number_edited_by_hand_is_caught():
    text = readme_study.README.read_text()
    block = readme_study.study_block()
    first_row = block.splitlines()[2]
    edited = text.replace(first_row, first_row.replace("|", "| 1", 1), 1)
    assert edited != text
    assert readme_study.with_block(edited, block) == text


def test_the_verdicts_come_from_the_verdict_table_one_row_each_and_the_untested_in_one_line(tmp_path):
    """The block reads tables/verdicts.csv, never the rendered report.md."""
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text(
        "hypothesis,title,verdict,rule,study,settings,scope,seeds,why,fixed_design_verdict,"
        "exact_verdict\n"
        'H1,Speed,supported,"sequential rule, look 3 of 3",s,"c10, clean","c10, clean (study s)",'
        "10,crossed,supported,inconclusive\n"
        "H4,Other,not tested,,,,,,not tested by these runs: no runs,,\n"
    )
    text = readme_study.verdicts_markdown(verdicts)
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 3 and "| H1 Speed " in table[2] and "**SUPPORTED**" in table[2] and "| 10 " in table[2]
    assert text.endswith("Not judged here: H4 (not tested by these runs: no runs).\n")


def test_only_the_text_between_the_markers_is_replaced():
    text = f"before\n{readme_study.BEGIN}\nold table\n{readme_study.END}\nafter\n"
    assert (
        readme_study.with_block(text, "new table")
        == f"before\n{readme_study.BEGIN}\nnew table\n{readme_study.END}\nafter\n"
    )


def test_missing_markers_are_an_error_naming_them():
    with pytest.raises(ValueError, match="markers"):
        readme_study.with_block("no markers here\n", "table")


def test_aggregating_published_runs_into_the_folder_that_holds_them_sets_the_tuning_trials_aside(tmp_path):
    """docs/cpu-study/runs lies inside docs/cpu-study: the output folder holds the results, so it must not be
    skipped as the aggregator's own output (that once counted the 50 tuning trials as main runs)."""
    import shutil

    from optbench.analysis import aggregate

    shutil.copytree(STUDY_DOCS / "runs", tmp_path / "study" / "runs")
    outcome = aggregate(
        tmp_path / "study" / "runs", tmp_path / "study", TARGET_ACC, REPO / "experiments", draw_figures=False
    )
    assert outcome.runs == 44
