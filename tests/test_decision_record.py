"""The decision record, sequential-<study>.json (optbench.formats.decision_record), parsed into its schema:
every record the harness has written reads (with and without `n`, NaN where it had no number); damaged copies
of a real one (a wrong type, a missing key, valid JSON of another shape, a non-finite number, a newer format)
are one line naming the file and the field. The next look of `study.py STUDY --until-decided` stops with
exit status 2 and the results folder byte-identical, before any tuning trains; the aggregator warns in one
line naming the file, ignores the record and goes on."""

import json
import math
import shutil
import sys

import pytest
from conftest import REPO
from test_formats import no_study_may_run
from test_sequential import HYPOTHESIS, STUDY

from optbench.errors import DamagedRunFile
from optbench.formats import decision_record
from optbench.formats.fields import UPGRADE

sys.path.insert(0, str(REPO / "src"))
import aggregate
from optbench.studies import study_command

PUBLISHED = REPO / "docs" / "cpu-study" / "runs"
RECORD = PUBLISHED / "sequential-cpu_demo_clean.json"  # with `n`; NaN where no conditional power
BEFORE_N = REPO / "docs" / "fidelity-study" / "runs" / "sequential-cpu_demo_clean.json"  # written before `n`
H1_Z = "imagefolder, clean: lion vs adamw"
A_SUMMARY = next(PUBLISHED.rglob("seed0/summary.json"))


def published(change=lambda record: None) -> str:
    """The published record's text, changed by `change(record)` (its JSON object) as a hand or a tool might."""
    record = json.loads(RECORD.read_text())
    change(record)
    return json.dumps(record, indent=2)


def first_entry(record: dict) -> dict:
    return record["decisions"][0]["hypotheses"]["H1"]


DAMAGES = {  # what is done to the record -> what its one line says
    "wrong type": (
        lambda: published(lambda record: record["decisions"][0].update(seeds="three")),
        "decisions[0].seeds is 'three'",
    ),
    "missing key": (
        lambda: published(lambda record: first_entry(record).pop("reason")),
        "field decisions[0].hypotheses.H1.reason is missing",
    ),
    "an unknown decision": (
        lambda: published(lambda record: first_entry(record).update(decision="maybe")),
        "field decisions[0].hypotheses.H1.decision is 'maybe', not one of continue, supported",
    ),
    "a look out of place": (
        lambda: published(lambda record: record["decisions"][1].update(look=0)),
        "field decisions[1] is look 0 at 6 seeds, not look 1 at 6",
    ),
    "alpha out of range": (lambda: published(lambda record: record.update(alpha=5)), "field alpha is 5, not in (0, 1)"),
    "looks not increasing": (
        lambda: published(lambda record: record.update(looks=[3, 3, 10])),
        "field looks is [3, 3, 10]",
    ),
    "a non-finite boundary": (
        lambda: published(lambda record: record["hypotheses"]["H1"]["efficacy"].__setitem__(1, math.inf)),
        "field hypotheses.H1.efficacy[1] is inf",
    ),
    "an infinite z": (
        lambda: published(lambda record: first_entry(record)["z"].update({H1_Z: -math.inf})),
        f"field decisions[0].hypotheses.H1.z.{H1_Z} is -inf",
    ),
    "a newer format": (
        lambda: published(lambda record: record.update(format=2)),
        "format 2, this optbench reads up to format 1",
    ),
    "a summary.json under its name": (lambda: A_SUMMARY.read_text(), "field study is missing"),
    "a tuning record under its name": (
        lambda: (PUBLISHED / "tuning-tune_cpu_demo.json").read_text(),
        "field alpha is missing",
    ),
    "a JSON list": (lambda: "[1, 2]", "is not a JSON object"),
    "torn": (lambda: RECORD.read_text()[:500], "is damaged"),
}


def snapshot(folder):
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_every_record_the_harness_wrote_reads():
    found = [*REPO.glob("docs/*/runs/**/sequential-*.json"), *REPO.glob("results/**/sequential-*.json")]
    assert RECORD in found and BEFORE_N in found
    for path in found:
        record = decision_record.read(path)
        assert record.study and record.looks_done == len(record.decisions) >= 1
    record, before_n = decision_record.read(RECORD), decision_record.read(BEFORE_N)
    assert record.looks == (3, 6, 10) and record.hypotheses["H2"].comparisons == 4
    assert record.decisions[0].hypotheses["H1"].n == {H1_Z: 3} and before_n.decisions[0].hypotheses["H1"].n is None
    assert record.decisions[1].hypotheses["H2"].conditional_power is None  # NaN in the file: no decision under way
    assert {name: entry.decision for name, entry in record.stopped().items()} == {"H2": "rejected", "H1": "supported"}
    assert record.ruling("H2")[0] == 1 and record.ruling("H1")[0] == 2 and record.ruling("H9") is None


@pytest.mark.parametrize("path", [RECORD, BEFORE_N], ids=["with n", "before n"])
def test_a_record_writes_back_in_its_own_layout_with_null_for_no_number(tmp_path, path):
    copy = tmp_path / path.name
    decision_record.write(copy, decision_record.read(path))
    assert copy.read_text() == path.read_text().replace("NaN", "null")  # key names, order and indent kept
    assert decision_record.read(copy) == decision_record.read(path)


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_record_is_one_line_naming_the_file_and_the_field(tmp_path, damage):
    text, message = DAMAGES[damage]
    path = tmp_path / RECORD.name
    path.write_text(text())
    with pytest.raises(DamagedRunFile) as raised:
        decision_record.read(path)
    assert str(raised.value).startswith(str(path)) and message in str(raised.value)
    way_out = UPGRADE if damage == "a newer format" else decision_record.WAY_OUT
    assert "\n" not in str(raised.value) and str(raised.value).endswith(way_out)


@pytest.fixture
def tiny_study(tmp_path):
    """A synthetic study run until decided and its results folder."""
    experiments = tmp_path / "experiments"
    (experiments / "studies").mkdir(parents=True)
    (experiments / "hypotheses").mkdir()
    (experiments / "studies" / "seqtiny.yaml").write_text(STUDY)
    (experiments / "hypotheses" / "hs.yaml").write_text(HYPOTHESIS)
    (tmp_path / "results").mkdir()
    return experiments, tmp_path / "results"


@pytest.mark.parametrize(
    "damage", ["wrong type", "a non-finite boundary", "a summary.json under its name", "a newer format"]
)
def test_the_next_look_of_a_damaged_record_is_one_error_line_exit_2_and_nothing_written(tiny_study, capsys, damage):
    experiments, results = tiny_study
    text, message = DAMAGES[damage]
    (results / "sequential-seqtiny.json").write_text(text())
    before = snapshot(results)
    argv = ["seqtiny", "--until-decided", "--experiments", str(experiments), "--set", f"paths.results_dir={results}"]
    assert study_command.main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"error: {results / 'sequential-seqtiny.json'}: ") and message in error
    assert len(error.splitlines()) == 1 and snapshot(results) == before


@pytest.mark.slow  # plans the real CPU demo (about 15 s)
def test_a_damaged_record_is_refused_before_the_tuning_study_trains(tmp_path, capsys, monkeypatch, real_cifar10_root):
    """cpu_demo_clean is tuned by tune_cpu_demo: its record used to be read only after the tuning had trained."""
    no_study_may_run(monkeypatch)
    results = tmp_path / "results"
    results.mkdir()
    (results / RECORD.name).write_text(DAMAGES["missing key"][0]())
    before = snapshot(results)
    assert study_command.main(["cpu_demo_clean", "--until-decided", "--set", f"paths.results_dir={results}"]) == 2
    captured = capsys.readouterr()
    assert "reason is missing" in captured.err and "tuning first" not in captured.out
    assert snapshot(results) == before


def test_the_aggregator_warns_in_one_line_ignores_a_damaged_record_and_goes_on(tmp_path, capsys):
    results = tmp_path / "results"
    run = next((PUBLISHED / "imagefolder-cifar10-jpeg-3bcb403b" / "none-0.0" / "sgd").glob("*epochs=8*"))
    shutil.copytree(run, results / run.name)
    (results / RECORD.name).write_text(DAMAGES["an unknown decision"][0]())
    before = snapshot(results)
    code = aggregate.main(
        [str(results), "--out", str(tmp_path / "out"), "--experiments", str(REPO / "experiments"), "--no-figures"]
    )
    assert code == 0 and snapshot(results) == before
    warnings = [line for line in capsys.readouterr().err.splitlines() if RECORD.name in line]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: {results / RECORD.name}: field decisions[0]")
    assert warnings[0].endswith("(ignored here: its hypotheses are judged by the fixed design)")
    assert "## Sequential decisions" not in (tmp_path / "out" / "report.md").read_text()
