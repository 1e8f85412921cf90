"""Every file the harness reads back has one schema (formats/): damaged copies of real run files written by
the harness (wrong types, missing keys, valid JSON of another shape, a flipped byte inside a compressed
member, non-finite numbers, a newer format) are one line naming the file and the field; the command whose
input is that file stops with exit status 2, a command over many runs counts the run as unreadable, and the
results tree is byte-identical afterwards. Numbers are checked at the door, and a study checks its whole
command before any tuning trains."""

import json
import math
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

from optbench.analysis.load import UNREADABLE, load_runs
from optbench.config.validation import validate
from optbench.errors import ConfigError, DamagedRunFile
from optbench.formats import predictions, run_files, run_record, run_summary

sys.path.insert(0, str(REPO / "src"))
import compare
from optbench.studies import study_command

PUBLISHED = REPO / "docs" / "cpu-study" / "runs"
PUBLISHED_RUN = next((PUBLISHED / "imagefolder-cifar10-jpeg-3bcb403b" / "none-0.0" / "sgd").glob("*epochs=8*/seed0"))


@pytest.fixture
def runs(tmp_path):
    """Copies of two published runs (SGD, seed 0 and 1, 8 epochs), so a test can damage them."""
    copies = []
    for seed in (0, 1):
        copy = tmp_path / "results" / f"seed{seed}"
        shutil.copytree(PUBLISHED_RUN.parent / f"seed{seed}", copy)
        copies.append(copy)
    return copies


def snapshot(folder):
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def edit_summary(run_dir, change):
    summary = json.loads((run_dir / "summary.json").read_text())
    change(summary)
    (run_dir / "summary.json").write_text(json.dumps(summary))


DAMAGES = {  # what is done to summary.json -> what the one line says
    "wrong type": (lambda summary: summary.update(epochs_done="eight"), "field epochs_done is 'eight'"),
    "completed without its headline": (
        lambda summary: summary["best"].pop("test/acc"),
        "says completed but holds no best.test/acc",
    ),
    "a metric of the wrong type": (
        lambda summary: summary["best"].update({"val/acc": "0.3"}),
        "field best.val/acc is '0.3'",
    ),
    "an unknown status": (lambda summary: summary.update(status="done"), "field status is 'done'"),
    "a newer format": (lambda summary: summary.update(format=99), "upgrade optbench"),
    "a non-finite number": (lambda summary: summary.update(wall_time_s=math.inf), "field wall_time_s is inf"),
    "a provenance part of the wrong type": (
        lambda summary: summary["noise"].update(rate="0.2"),
        "field noise.rate is '0.2'",
    ),
    "a provenance part of another shape": (lambda summary: summary.update(dataset=["cifar10"]), "field dataset is"),
    "a noise rate out of range": (lambda summary: summary["noise"].update(realised_rate=1.5), "noise.realised_rate"),
    "a precision of the wrong type": (
        lambda summary: summary["device_policy"].update(amp=16),
        "field device_policy.amp is 16",
    ),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_summary_is_one_line_naming_the_file_and_the_field(runs, damage):
    change, message = DAMAGES[damage]
    edit_summary(runs[0], change)
    with pytest.raises(DamagedRunFile) as raised:
        run_summary.read(runs[0])
    assert str(runs[0] / "summary.json") in str(raised.value) and message in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "damage", ["wrong type", "completed without its headline", "a newer format", "a provenance part of the wrong type"]
)
def test_many_runs_count_a_damaged_summary_as_unreadable_never_in_a_mean(runs, tmp_path, damage):
    edit_summary(runs[0], DAMAGES[damage][0])
    before = snapshot(tmp_path / "results")
    loaded = load_runs(tmp_path / "results", target_acc=0.9).runs.set_index("run_id")
    assert loaded.loc["seed0", "status"] == UNREADABLE and loaded.loc["seed1", "status"] == "completed"
    assert DAMAGES[damage][1] in loaded.loc["seed0", "notes"]
    assert snapshot(tmp_path / "results") == before


def test_the_aggregator_lists_the_unreadable_run_in_runs_not_completed(runs, tmp_path, capsys):
    import aggregate

    edit_summary(runs[0], DAMAGES["completed without its headline"][0])
    before = snapshot(tmp_path / "results")
    assert aggregate.main([str(tmp_path / "results"), "--out", str(tmp_path / "out"), "--no-figures"]) == 0
    problems = (tmp_path / "out" / "tables" / "runs_not_completed.csv").read_text()
    assert "seed0" in problems and UNREADABLE in problems and "seed1" not in problems
    assert snapshot(tmp_path / "results") == before


def test_a_metrics_line_of_another_shape_makes_the_run_unreadable_a_torn_one_does_not(runs, tmp_path):
    metrics = runs[0] / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    metrics.write_text("\n".join([lines[0].replace('"epoch": 1', '"epoch": "one"'), *lines[1:]]) + "\n")
    (runs[1] / "metrics.jsonl").write_text((runs[1] / "metrics.jsonl").read_text() + '{"epoch": 9, "val')
    loaded = load_runs(tmp_path / "results", target_acc=0.9).runs.set_index("run_id")
    assert (
        loaded.loc["seed0", "status"] == UNREADABLE
        and "metrics.jsonl line 1: field epoch" in loaded.loc["seed0", "notes"]
    )
    assert loaded.loc["seed1", "status"] == "completed"


def test_compare_of_a_damaged_run_is_one_error_line_exit_2_and_writes_nothing(runs, tmp_path, capsys):
    edit_summary(runs[1], DAMAGES["wrong type"][0])
    before = snapshot(tmp_path)
    assert compare.main([str(runs[0]), str(runs[1]), "--figure", str(tmp_path / "f.png")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: RUN_B: ") and "epochs_done" in error and len(error.splitlines()) == 1
    assert snapshot(tmp_path) == before


def test_one_reader_gives_compare_and_replay_a_run_directory_or_one_line(runs, tmp_path):
    """formats/run_files.py: the three files of a run; a folder that is not one is a ConfigError opened by the
    command's name for it; a damaged file is its module's DamagedRunFile, left to the command to word."""
    run = run_files.read(runs[0], "RUN_A")
    assert run.summary.status == "completed" and run.record.config["seed"] == 0 and len(run.epochs) == 8
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"^RUN_A .*/empty: not a run directory \(no record.json\)"):
        run_files.read(tmp_path / "empty", "RUN_A")
    with pytest.raises(ConfigError, match=r"^\S*/missing: no such directory: give a run directory"):
        run_files.read(tmp_path / "missing")
    edit_summary(runs[1], DAMAGES["wrong type"][0])
    with pytest.raises(DamagedRunFile, match="summary.json"):
        run_files.read(runs[1], "RUN_B")


def test_files_written_before_format_versions_read_as_format_1(runs):
    summary = run_summary.read(runs[0])  # the published files have no "format" in summary.json
    assert "format" not in json.loads((runs[0] / "summary.json").read_text())
    assert (
        summary.version == 1
        and summary.status == "completed"
        and summary.headline == pytest.approx(json.loads((runs[0] / "summary.json").read_text())["best"]["test/acc"])
    )


def test_a_written_summary_carries_its_format_and_reads_back(tmp_path, runs):
    summary = run_summary.read(runs[0])
    run_summary.write(tmp_path, summary.content)
    assert json.loads((tmp_path / "summary.json").read_text())["format"] == run_summary.FORMAT
    assert run_summary.read(tmp_path).best == summary.best


def test_a_record_of_another_shape_is_one_line(runs):
    record = json.loads((runs[0] / "record.json").read_text())
    record["config"] = ["not", "a", "mapping"]
    (runs[0] / "record.json").write_text(json.dumps(record))
    with pytest.raises(DamagedRunFile, match="record.json: field config is .*not a JSON object"):
        run_record.read(runs[0])


def test_a_flipped_byte_inside_a_compressed_member_is_a_damaged_file_not_a_traceback(runs, tmp_path):
    path = tmp_path / "p.npz"
    predictions.write(path, [1, 2, 3] * 300, [1, 2, 0] * 300, epoch=3, num_classes=10)
    with zipfile.ZipFile(path) as archive:
        member = archive.getinfo("predicted.npy")
    data = bytearray(path.read_bytes())
    start = member.header_offset + 30 + len(member.filename) + len(member.extra)  # the compressed bytes
    data[start + member.compress_size // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(DamagedRunFile, match="p.npz cannot be read"):
        predictions.read(path)


@pytest.mark.parametrize(
    "override, key",
    [
        ("optimizer.lr=inf", "optimizer.lr=inf"),
        ("optimizer.weight_decay=nan", "optimizer.weight_decay=nan"),
        ("train.divergence_factor=inf", "train.divergence_factor=inf"),
    ],
)
def test_non_finite_config_numbers_are_refused_at_the_door(tiny_config, override, key):
    with pytest.raises(ConfigError, match=f"^{key}: "):
        validate(tiny_config(override))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["cpu_demo", "--plan-seeds", "--pilot", "x", "--delta", "inf"], "--delta inf: give the effect"),
        (["cpu_demo", "--until-decided", "--max-seeds", "1"], "--max-seeds 1: give at least 2"),
        (["cpu_demo", "--set", "optimizer.lr=-inf"], "optimizer.lr=-inf"),
    ],
)
def test_a_study_checks_its_whole_command_before_tuning_trains(tmp_path, capsys, argv, message):
    """cpu_demo is tuned by tune_cpu_demo: a bad option used to be refused after the tuning study had trained."""
    results = tmp_path / "results"
    code = study_command.main([*argv, "--set", f"paths.results_dir={results}"])
    captured = capsys.readouterr()
    assert code == 2 and message in captured.err and "tuning first" not in captured.out
    assert not results.exists()


def test_docs_runs_md_names_every_key_the_run_files_hold(runs):
    """docs/runs.md lists every key of the real files the harness wrote and every field of the schemas."""
    import dataclasses

    text = (REPO / "docs" / "runs.md").read_text()
    summary = json.loads((runs[0] / "summary.json").read_text())
    record = json.loads((runs[0] / "record.json").read_text())
    epoch = json.loads((runs[0] / "metrics.jsonl").read_text().splitlines()[0])
    noisy = json.loads(next(PUBLISHED.rglob("symmetric-0.4/*/*/seed0/metrics.jsonl")).read_text().splitlines()[0])
    schema = {field.name for cls in (run_summary.Summary, run_record.RunRecord) for field in dataclasses.fields(cls)}
    keys = {
        *summary,
        *record,
        *record["identity"],
        *epoch,
        *noisy,
        *schema,
        "format",
        "diverged_at",
        "mirror",
        "resumes",
        "selected_by",
    } - {"version", "content"}
    assert sorted(key for key in keys if f"`{key}`" not in text) == []


def damaged_label_file(tmp_path: Path) -> Path:
    """A copy of the official CIFAR-10N file with one byte flipped in its middle."""
    payload = bytearray((REPO / ".." / "shared" / "data" / "cifar-n" / "CIFAR-10_human.pt").read_bytes())
    payload[len(payload) // 2] ^= 0xFF
    (tmp_path / "CIFAR-10_human.pt").write_bytes(bytes(payload))
    return tmp_path / "CIFAR-10_human.pt"


def no_study_may_run(monkeypatch) -> None:
    """A refusal that comes too late would train a real tuning study: fail at once instead."""

    def refuse(study, *_):
        raise AssertionError(f"study {study.id} was started before the command was refused")

    monkeypatch.setattr(study_command, "run_study", refuse)


@pytest.mark.parametrize("problem", ["missing", "another md5"])
def test_a_tuned_study_is_refused_before_its_tuning_trains_when_its_own_runs_cannot_start(
    tmp_path, capsys, monkeypatch, problem
):
    """human_noise_cpu is tuned by tune_cpu_demo (clean labels): a label file that does not exist, or whose md5
    is not the official one, concerns only the main study's runs, and is refused before the tuning study
    trains, selects or writes a tuned config."""
    label_file = Path("/no/such.pt") if problem == "missing" else damaged_label_file(tmp_path)
    no_study_may_run(monkeypatch)
    message = "no such file" if problem == "missing" else "its md5 is not the official CIFAR-10_human.pt's"
    experiments = tmp_path / "experiments"
    shutil.copytree(REPO / "experiments", experiments)
    study_file = experiments / "studies" / "human_noise_cpu.yaml"
    study_file.write_text(study_file.read_text().replace("../shared/data/cifar-n/CIFAR-10_human.pt", str(label_file)))
    results, conf = tmp_path / "results", tmp_path / "conf"
    shutil.copytree(REPO / "conf", conf)
    before = snapshot(conf)
    code = study_command.main(
        [
            "human_noise_cpu",
            "--experiments",
            str(experiments),
            "--conf-dir",
            str(conf),
            "--set",
            f"paths.results_dir={results}",
        ]
    )
    captured = capsys.readouterr()
    assert code == 2 and f"noise.label_file={label_file}: {message}" in captured.err
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1
    assert "tuning first" not in captured.out and not results.exists() and snapshot(conf) == before


def test_until_decided_checks_its_hypotheses_and_decision_record_before_tuning_trains(tmp_path, capsys, monkeypatch):
    """cpu_demo_clean is tuned by tune_cpu_demo: a misspelt --hypotheses name, --hypotheses without
    --until-decided, and a decision record of another shape are each refused before any tuning run exists."""
    no_study_may_run(monkeypatch)
    results, conf = tmp_path / "results", tmp_path / "conf"
    shutil.copytree(REPO / "conf", conf)
    results.mkdir()
    (results / "sequential-cpu_demo_clean.json").write_text(json.dumps({"format": 1, "study": "cpu_demo_clean"}))
    before = snapshot(results), snapshot(conf)
    common = ["cpu_demo_clean", "--conf-dir", str(conf), "--set", f"paths.results_dir={results}"]
    for extra, message in (
        (["--until-decided", "--hypotheses", "H22"], "--hypotheses H22: did you mean H2?"),
        (["--hypotheses", "H2"], "--hypotheses names the hypotheses --until-decided decides: add --until-decided"),
        (["--until-decided"], "sequential-cpu_demo_clean.json: field alpha is missing"),
    ):
        assert study_command.main(common + extra) == 2
        captured = capsys.readouterr()
        assert captured.err.startswith("error: ") and message in captured.err and captured.err.count("\n") == 1
        assert "tuning first" not in captured.out and (snapshot(results), snapshot(conf)) == before
