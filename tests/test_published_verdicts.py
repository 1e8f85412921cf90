"""The published studies say one thing per hypothesis. Each is aggregated again from its run records with the
command its report names (docs/cpu-study, docs/human-noise-study): no hypothesis has two different verdicts in
its report or in README's block, none is judged on a setting outside the scope of the study that tests it, and
the committed verdict tables are what the runs give."""

import re

import pandas as pd
import pytest
from conftest import REPO

VERDICT = r"(SUPPORTED|REJECTED|INCONCLUSIVE)"
# study folder -> (--study, the settings each hypothesis is judged on: the plan of the study that tests it)
PUBLISHED = {
    "cpu-study": (
        None,
        {
            "H1": ["imagefolder, clean"],  # cpu_demo_clean, run until decided
            "H2": ["imagefolder, clean"],
            "H3": ["imagefolder, clean", "imagefolder, symmetric 40%"],
        },
    ),  # cpu_demo's runs
    "human-noise-study": (
        "human_noise_cpu",
        {"H3-human": ["imagefolder, clean", "imagefolder, human aggre 9.38%", "imagefolder, human worst 39.84%"]},
    ),
}


def aggregated(name: str, out):
    from optbench.analysis import aggregate
    from optbench.specs.study_spec import find_study

    study_name, _ = PUBLISHED[name]
    study = find_study(study_name, REPO / "experiments") if study_name else None
    aggregate(REPO / "docs" / name / "runs", out, 0.5, REPO / "experiments", draw_figures=False, study=study)
    return (
        pd.read_csv(out / "tables" / "verdicts.csv", dtype=str, keep_default_na=False),
        pd.read_csv(out / "tables" / "hypotheses.csv", dtype=str, keep_default_na=False),
        (out / "report.md").read_text(),
    )


def verdicts_in_report(report: str) -> dict[str, set[str]]:
    """Every verdict the report states for each hypothesis: its rows of the verdict table, its section heading."""
    stated: dict[str, set[str]] = {}
    for line in report.splitlines():
        row = re.match(rf"\| (\S+) .*\| \*\*{VERDICT}\*\* *\|", line)
        heading = re.match(rf"### (\S+): .*: {VERDICT}$", line)
        for found in filter(None, (row, heading)):
            stated.setdefault(found.group(1), set()).add(found.group(2).lower())
    return stated


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PUBLISHED))
def test_each_hypothesis_has_one_verdict_on_the_settings_of_the_study_that_tests_it(name, tmp_path):
    verdicts, checks, report = aggregated(name, tmp_path)
    judged = verdicts[verdicts["verdict"] != "not tested"]
    scopes = PUBLISHED[name][1]
    assert sorted(judged["hypothesis"]) == sorted(scopes)  # one row each, and only the hypotheses tested
    for row in judged.itertuples():
        assert row.settings.split("; ") == scopes[row.hypothesis], row.hypothesis
        for check in checks[checks["hypothesis"] == row.hypothesis].itertuples():
            # a noise drop's check is named by its dataset and the noise level it compares
            assert any(setting.startswith(check.setting) for setting in scopes[row.hypothesis]), check
    assert verdicts_in_report(report) == {row.hypothesis: {row.verdict} for row in judged.itertuples()}
    committed = REPO / "docs" / name / "tables"
    for table in ("verdicts.csv", "hypotheses.csv"):
        assert (tmp_path / "tables" / table).read_text() == (committed / table).read_text(), table


def test_readme_states_each_cpu_study_verdict_once_as_the_report_does():
    """README's block is the verdict table's rows; outside the block no verdict is stated in capitals."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_study", REPO / "scripts" / "readme_study.py")
    readme_study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(readme_study)
    text = (REPO / "README.md").read_text()
    block = text[text.index(readme_study.BEGIN) : text.index(readme_study.END)]
    table = pd.read_csv(readme_study.VERDICTS_CSV, dtype=str, keep_default_na=False)
    judged = table[table["verdict"] != "not tested"]
    assert verdicts_in_report(block) == {row.hypothesis: {row.verdict} for row in judged.itertuples()}
    outside = text.replace(block, "")
    assert not re.search(VERDICT, outside), re.search(VERDICT, outside)
