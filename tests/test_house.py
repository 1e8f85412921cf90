"""The house's promises: planning and checking load no torch, one list of the settings that do not change
a run's numbers serves directory names (as Hydra makes them), resume and grouping, the name registries agree,
every import points down the layers, the statistics room takes numbers (no file, no format, no run table), each
package's docstring maps exactly its modules, and each file format is defined by one module."""

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CONF_DIR, REPO, compose_config

from optbench import identity
from optbench.registry import choices


def loaded_modules(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after `code` (run from the repository's src/)."""
    probe = f"import sys\n{code}\nprint(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO / "src", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize(
    "code",
    [
        "from optbench.studies.study_command import main\nmain(['--list'])",
        "from optbench.studies.study_command import main\nmain(['full', '--dry-run', '--no-estimate'])",
        "from optbench.studies.study_command import main\nmain(['full', '--status'])",
        "from pathlib import Path\nfrom optbench.config.hydra_glue import register_resolvers\nregister_resolvers()\n"
        "from optbench.training.train_command import preflight\n"
        "assert preflight(['-m', 'optimizer=sgd,adam,adamw,lion,muon', 'seed=0,1,2', 'dataset=cifar10,cifar100'], "
        "Path('../conf')) == 30",
        "from optbench.registry import optimizers, choices\nassert choices.OPTIMIZERS == optimizers.NAMES",
    ],
    ids=[
        "study --list",
        "study full --dry-run --no-estimate",
        "study full --status",
        "preflight of a 30-run sweep",
        "the optimizer registry",
    ],
)
@pytest.mark.slow
def test_planning_and_checking_import_no_torch(code):
    assert not {name for name in loaded_modules(code) if name == "torch" or name.startswith("torch.")}


def numbers_free_keys_in(*overrides: str) -> set[str]:
    from omegaconf import OmegaConf

    flat = identity.flatten(OmegaConf.to_container(compose_config(list(overrides)), resolve=True))
    return {key for key in flat if identity.is_numbers_free(key)}


def hydra_job(overrides: list[str]) -> tuple[str, str, str]:
    """(override_dirname, run dir, sweep job dir) as Hydra 1.3 makes them for these overrides of conf/."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    return (cfg.hydra.job.override_dirname, cfg.hydra.run.dir, f"{cfg.hydra.sweep.dir}/{cfg.hydra.sweep.subdir}")


def same_values(flat: dict) -> list[str]:
    """`key=value` overrides that set each key to the value it already has (so only the name can change)."""

    def spelled(value) -> str:
        if value is None or isinstance(value, bool):
            return {None: "null", True: "true", False: "false"}[value]
        return repr(value) if isinstance(value, str) else str(value)

    return [f"{key}={spelled(value)}" for key, value in flat.items()]


def test_hydra_names_run_directories_without_the_numbers_free_settings():
    from omegaconf import OmegaConf

    from optbench.config.hydra_glue import run_variant

    base = ["logger=[tensorboard,mlflow,wandb,csv]", "noise=human"]
    flat = identity.flatten(OmegaConf.to_container(compose_config(base), resolve=True))
    free = {key: value for key, value in flat.items() if identity.is_numbers_free(key)}
    plain_name, plain_dir, _ = hydra_job(base)
    name, run_dir, sweep_dir = hydra_job(
        [*base, *same_values(free), "+paths.scratch=/tmp/x", "seed=0", "noise.label_set=aggre"]
    )
    assert (plain_name, name) == ("", "") and run_dir == plain_dir == sweep_dir
    assert hydra_job([*base, "+dataset.root=x"])[0] == ""  # the data fingerprint names its level instead
    assert len(free) >= len(identity.NUMBERS_FREE_KEYS)
    # and every setting that can change the numbers names the directory, run and sweep alike
    changing = {key: value for key, value in flat.items() if not identity.left_out_of_directory_name(key)}
    name, run_dir, sweep_dir = hydra_job([*base, *same_values(changing)])
    assert name == ",".join(sorted(same_values(changing))) and run_dir == sweep_dir
    assert run_dir == f"results/cifar10/human-aggre/sgd/{run_variant(name)}seed0"


def test_identity_ignores_exactly_the_numbers_free_settings():
    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(compose_config([]), resolve=True)
    moved = OmegaConf.to_container(
        compose_config(
            ["paths.results_dir=elsewhere", "device=cpu", "train.eval_batch_size=8", "train.progress_bar=false"]
        ),
        resolve=True,
    )
    changed = OmegaConf.to_container(compose_config(["optimizer.lr=0.3"]), resolve=True)
    assert identity.run_identity(plain, "d") == identity.run_identity(moved, "d")
    assert identity.identity_differences(identity.run_identity(plain, "d"), identity.run_identity(changed, "d")) == [
        "optimizer.lr: 0.1 -> 0.3"
    ]
    assert identity.identity_differences(identity.run_identity(plain, "d"), identity.run_identity(plain, "e")) == [
        "the data differ"
    ]


def test_the_registries_cover_the_names_config_accepts():
    from optbench.data.sources import SOURCES
    from optbench.device.policy import AMP_DTYPES
    from optbench.registry import workloads
    from optbench.training.models import BUILDERS

    assert tuple(SOURCES) == choices.DATASETS
    assert tuple(BUILDERS) == choices.ARCHITECTURES
    assert tuple(AMP_DTYPES) == choices.AMP_CHOICES
    for group, names in (
        ("dataset", choices.DATASETS),
        ("noise", choices.NOISE_KINDS),
        ("scheduler", choices.SCHEDULES),
        ("model", choices.ARCHITECTURES),
        ("workload", workloads.NAMES),
    ):
        assert {path.stem for path in (CONF_DIR / group).glob("*.yaml")} == set(names), group
    assert {path.stem for path in (CONF_DIR / "logger").glob("*.yaml")} == {*choices.LOGGERS, "none"}
    assert set(choices.LOGGER_PACKAGES) == set(choices.LOGGERS)
    launchers = {path.stem for path in (CONF_DIR / "hydra" / "launcher").glob("*.yaml")}
    assert launchers == set(choices.LAUNCHERS) - {"basic"}


# ---- every arrow points down -------------------------------------------------------------------------
PACKAGE = REPO / "src" / "optbench"
# Each top-level module or package of optbench, by layer (lowest first). A new one must be placed here.
LAYERS = {
    "contract": {
        "optbench",
        "optbench.errors",
        "optbench.durations",
        "optbench.fileio",
        "optbench.identity",
        "optbench.rundir",
        "optbench.run_states",
        "optbench.reproducibility",
        "optbench.values",
        "optbench.command_line",
        "optbench.registry",
        "optbench.formats",
        "optbench.specs",
    },
    "foundation": {"optbench.data", "optbench.device", "optbench.config"},
    "wing": {"optbench.training", "optbench.studies", "optbench.analysis"},
    "command": {"optbench.console_scripts"},  # runs the entry point files, which import the wings
}
RANK = {part: rank for rank, parts in enumerate(LAYERS.values()) for part in parts}
# A wing may use another only along these arrows: a study estimates with the training wing's model and
# decides with the aggregator's verdicts; training and the aggregator stand alone.
WING_ARROWS = {
    "optbench.training": set(),
    "optbench.analysis": set(),
    "optbench.studies": {"optbench.training", "optbench.analysis"},
}


def part_of(module: str) -> str:
    """optbench.device.fastest -> optbench.device; optbench.rundir -> optbench.rundir."""
    return ".".join(module.split(".")[:2])


def package_imports(package: Path) -> dict[str, set[str]]:
    """module -> the optbench modules it imports anywhere in its code (function-level imports included)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the importing module's package
                    anchor = module.split(".")[: len(module.split(".")) - node.level + (parts[-1] == "__init__")]
                    base = ".".join([*anchor, *([base] if base else [])])
                imported.add(base)
                # `from optbench import rundir` imports the module optbench.rundir
                imported |= {
                    f"{base}.{alias.name}"
                    for alias in node.names
                    if (package.parent / base.replace(".", "/") / alias.name).with_suffix(".py").exists()
                    or (package.parent / base.replace(".", "/") / alias.name).is_dir()
                }
        found[module] = {name for name in imported if name == "optbench" or name.startswith("optbench.")}
    return found


def layering_violations(package: Path) -> list[str]:
    wrong = []
    for module, imported in package_imports(package).items():
        here = part_of(module)
        if here not in RANK:
            wrong.append(f"{module}: place {here} in a layer of tests/test_house.py LAYERS")
            continue
        for name in sorted(imported):
            there = part_of(name)
            if there == here or there not in RANK:
                continue
            if RANK[there] > RANK[here]:
                wrong.append(f"{module} imports {name}: a lower layer takes what it needs from above as an argument")
            elif RANK[there] == RANK[here] == RANK["optbench.training"] and there not in WING_ARROWS[here]:
                wrong.append(f"{module} imports {name}: {here} does not use {there} (tests/test_house.py WING_ARROWS)")
    return wrong


def test_every_import_points_down():
    assert layering_violations(PACKAGE) == []


def test_the_layering_check_sees_an_import_up_the_house(tmp_path):
    copy = tmp_path / "optbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    fastest = copy / "device" / "fastest.py"
    fastest.write_text(fastest.read_text() + "\n\ndef late():\n    from optbench.training.models import build_model\n")
    glue = copy / "config" / "hydra_glue.py"
    glue.write_text(
        glue.read_text().replace(
            "from optbench.rundir import", "from optbench.studies import launchers\nfrom optbench.rundir import"
        )
    )
    (copy / "analysis" / "late.py").write_text("from ..studies import plan\n")
    (copy / "newcomer.py").write_text("")
    assert layering_violations(copy) == [
        "optbench.analysis.late imports optbench.studies: optbench.analysis does not use optbench.studies "
        "(tests/test_house.py WING_ARROWS)",
        "optbench.analysis.late imports optbench.studies.plan: optbench.analysis does not use optbench.studies "
        "(tests/test_house.py WING_ARROWS)",
        "optbench.config.hydra_glue imports optbench.studies: a lower layer takes what it needs from above as an argument",  # noqa: E501
        "optbench.config.hydra_glue imports optbench.studies.launchers: a lower layer takes what it needs from above as an "  # noqa: E501
        "argument",
        "optbench.device.fastest imports optbench.training.models: a lower layer takes what it needs from above "
        "as an argument",
        "optbench.newcomer: place optbench.newcomer in a layer of tests/test_house.py LAYERS",
    ]


# ---- the analysis wing's rooms ------------------------------------------------------------------------
# Within optbench.analysis, arrows point down: writing -> judging -> statistics. The loading modules at the
# top of the package (load, groups, inputs) serve every room but statistics, which takes arrays and numbers.
ROOM_USES = {
    "loading": set(),
    "statistics": set(),
    "judging": {"loading", "statistics"},
    "writing": {"loading", "statistics", "judging"},
    "pipeline": {"loading", "statistics", "judging", "writing"},
}


def room_of(module: str) -> str | None:
    """optbench.analysis.judging.fidelity -> judging; optbench.analysis.load -> loading; outside -> None."""
    parts = module.split(".")
    if parts[:2] != ["optbench", "analysis"] or len(parts) < 3:
        return None
    if parts[2] in ("statistics", "judging", "writing"):
        return parts[2]
    return "pipeline" if parts[2] == "pipeline" else "loading"


def room_violations(package: Path) -> list[str]:
    wrong = []
    for module, imported in package_imports(package).items():
        here = room_of(module)
        for name in sorted(imported):
            there = room_of(name)
            if here and there and there != here and there not in ROOM_USES[here]:
                wrong.append(f"{module} imports {name}: the {here} room does not use the {there} room")
    return wrong


def test_the_analysis_rooms_point_down():
    assert room_violations(PACKAGE) == []


def test_the_room_check_sees_statistics_reaching_up(tmp_path):
    copy = tmp_path / "optbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "analysis" / "statistics" / "late.py").write_text("from optbench.analysis.writing import tables\n")
    assert room_violations(copy) == [
        "optbench.analysis.statistics.late imports optbench.analysis.writing: the statistics room does not use the "
        "writing room",
        "optbench.analysis.statistics.late imports optbench.analysis.writing.tables: the statistics room does not use "
        "the writing room",
    ]


# The statistics room is pure: functions over arrays and numbers. It imports nothing of optbench outside itself (no
# file format, status or metric key), touches no file and reads no run table (the rliable shape).
FILE_AND_TABLE_NAMES = {"open", "Path", "DataFrame", "read_csv", "to_csv", "load", "save"}
FILE_MODULES = {"pathlib", "os", "io", "shutil", "glob"}
RUN_COLUMNS = {"setting", "arm", "status", "seed", "run_id", "best_epoch"}  # a run table's columns


def imported_names(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """The modules an import statement names, a relative one resolved against `module`'s package."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = module.split(".")[: -node.level]
        base = ".".join([*anchor, *([base] if base else [])])
    return [base]


def statistics_impurities(package: Path) -> list[str]:
    """'<module>:<line>: <what>' for each import from outside the statistics room (the standard library's file
    modules included), each use of a file or table name (FILE_AND_TABLE_NAMES) and each run column read by key."""
    wrong: list[tuple[str, int, str]] = []  # (module, line, what), sorted at the end: ast.walk goes breadth first
    for path in sorted((package / "analysis" / "statistics").glob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = (module, getattr(node, "lineno", 0))
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in imported_names(node, module):
                    outside = name.startswith("optbench") and not name.startswith("optbench.analysis.statistics")
                    if outside or name.split(".")[0] in FILE_MODULES:
                        wrong.append((*where, f"imports {name}"))
            elif isinstance(node, (ast.Name, ast.Attribute)):
                name = node.id if isinstance(node, ast.Name) else node.attr
                if name in FILE_AND_TABLE_NAMES:
                    wrong.append((*where, f"uses {name}"))
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                if node.slice.value in RUN_COLUMNS:
                    wrong.append((*where, f"reads the run column {node.slice.value!r}"))
    return [f"{module}:{line}: {what}" for module, line, what in sorted(set(wrong))]


def test_the_statistics_room_takes_numbers_not_files_or_run_tables():
    assert statistics_impurities(PACKAGE) == []


def test_the_purity_check_sees_statistics_reading_a_run_table_and_a_file(tmp_path):
    copy = tmp_path / "optbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "analysis" / "statistics" / "late.py").write_text(
        "from pathlib import Path\n"
        "\n"
        "import pandas as pd\n"
        "\n"
        "from optbench.formats.run_summary import COMPLETED\n"
        "from ..load import load_runs\n"
        "from .summaries import describe\n"
        "\n"
        "\n"
        "def done(runs, folder):\n"
        "    extra = pd.read_csv(Path(folder) / 'more.csv')\n"
        "    return describe(runs[runs['status'] == COMPLETED]['acc']), open(folder).read(), extra\n"
    )
    assert statistics_impurities(copy) == [
        "optbench.analysis.statistics.late:1: imports pathlib",
        "optbench.analysis.statistics.late:5: imports optbench.formats.run_summary",
        "optbench.analysis.statistics.late:6: imports optbench.analysis.load",
        "optbench.analysis.statistics.late:11: uses Path",
        "optbench.analysis.statistics.late:11: uses read_csv",
        "optbench.analysis.statistics.late:12: reads the run column 'status'",
        "optbench.analysis.statistics.late:12: uses open",
    ]


# ---- each package maps its modules ------------------------------------------------------------------
def unmapped_modules(package: Path) -> list[str]:
    """'<package>: <name>' for each module (<name>.py) or subpackage (<name>/) of every package under `package` that its
    __init__ docstring's map (indented lines, each opening with a name) leaves out, and each it maps that is gone."""
    problems = []
    for init in sorted(package.rglob("__init__.py")):
        folder = init.parent
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")), clean=False) or ""
        # a map's line: `    <name>.py  its job`
        named = set(re.findall(r"^ *(\w+\.py|\w+/) ", docstring, flags=re.MULTILINE))
        present = {path.name for path in folder.glob("*.py") if path.name != "__init__.py"}
        present |= {f"{path.name}/" for path in folder.iterdir() if (path / "__init__.py").is_file()}
        where = folder.relative_to(package.parent).as_posix()
        problems += [f"{where}: {name} is not in its __init__ docstring" for name in sorted(present - named)]
        problems += [
            f"{where}: its __init__ docstring names {name}, which is not there" for name in sorted(named - present)
        ]
    return problems


def test_each_package_docstring_names_exactly_its_modules():
    assert unmapped_modules(PACKAGE) == []


def test_the_module_map_check_sees_a_module_left_out_and_one_gone(tmp_path):
    copy = tmp_path / "optbench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "analysis" / "newcomer.py").write_text('"""A new module."""\n')
    (copy / "formats" / "predictions.py").unlink()
    assert unmapped_modules(copy) == [
        "optbench/analysis: newcomer.py is not in its __init__ docstring",
        "optbench/formats: its __init__ docstring names predictions.py, which is not there",
    ]


# ---- one definition per file format ------------------------------------------------------------------
# A file's name (or glob) as a literal belongs to the module that owns its format; others use its constants.
FORMAT_OWNERS = {
    "record.json": "optbench.rundir",
    "summary.json": "optbench.rundir",
    "metrics.jsonl": "optbench.rundir",
    "checkpoint.pt": "optbench.rundir",
    "predictions.npz": "optbench.rundir",
    "tuning-*.json": "optbench.formats.tuning_record",
    "sequential-*.json": "optbench.formats.decision_record",
    "estimate-*.json": "optbench.formats.study_estimate",
}
FORMAT_PREFIXES = {
    "tuning-": "optbench.formats.tuning_record",
    "sequential-": "optbench.formats.decision_record",
    "estimate-": "optbench.formats.study_estimate",
}


def file_names_spelled_out(package: Path) -> list[str]:
    """'module: name' for each format file name written as a literal outside its owner (docstrings aside)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and FORMAT_OWNERS.get(node.value, module) != module:
                found.append(f"{module}: {node.value}")
            elif isinstance(node, ast.JoinedStr) and len(node.values) >= 2:  # f"tuning-{study}.json"
                first, last = node.values[0], node.values[-1]
                if (
                    isinstance(first, ast.Constant)
                    and first.value in FORMAT_PREFIXES
                    and isinstance(last, ast.Constant)
                    and last.value == ".json"
                    and FORMAT_PREFIXES[first.value] != module
                ):
                    found.append(f"{module}: {first.value}...{last.value}")
    return found


def test_each_file_format_is_named_only_by_the_module_that_owns_it():
    assert file_names_spelled_out(PACKAGE) == []


def test_the_tuning_record_the_runner_writes_is_what_the_aggregator_reads(tmp_path):
    from optbench.analysis.judging.tuning_report import read_tuning
    from optbench.formats import tuning_record

    run = {"run_dir": "synthetic/none-0.0/lion/seed0", "seed": 0, "status": "completed", "score": 0.4}
    record = {
        "format": tuning_record.FORMAT,
        "study": "tune_demo",
        "optimizers": {
            "lion": {
                "space": {"optimizer.lr": {"low": 1e-5, "high": 1e-3, "scale": "log"}},
                "trials": [{"index": 0, "values": {"optimizer.lr": 1e-4}, "score": 0.4, "runs": [run]}],
                "winner": {"index": 0, "values": {"optimizer.lr": 1e-4}, "mean": 0.4, "seeds": [0], "scores": [0.4]},
            }
        },
    }
    path = tuning_record.write(tmp_path / "results", record)
    assert path == tmp_path / "results" / "tuning-tune_demo.json"
    found = read_tuning(tmp_path / "results")
    assert [study.name for study in found.studies] == ["tune_demo"] and not found.warnings
    assert found.run_dirs == {(tmp_path / "results" / run["run_dir"]).resolve()}
    # the writer holds itself to the contract the reader checks, and writes nothing off it
    del record["optimizers"]["lion"]["trials"][0]["runs"][0]["run_dir"]
    record["study"] = "broken"
    with pytest.raises(ValueError, match=r"field optimizers\.lion\.trials\[0\]\.runs\[0\]\.run_dir is missing"):
        tuning_record.write(tmp_path / "results", record)
    assert not tuning_record.record_path(tmp_path / "results", "broken").exists()


def test_one_python_is_promised_everywhere():
    """requires-python, ruff's and mypy's target, README's set-up and CI's check name the same Python (3.11)."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["requires-python"] == ">=3.11"
    assert project["tool"]["ruff"]["target-version"] == "py311"
    assert project["tool"]["mypy"]["python_version"] == "3.11"
    assert "## Set up (a fresh machine with Python 3.11+)" in (REPO / "README.md").read_text()
    assert "sys.version_info < (3, 11)" in (REPO / ".ci" / "run").read_text()


def test_a_tuning_record_is_written_from_its_schema_byte_for_byte():
    """The runner builds a TuningRecord and the format module writes it: each published record, read and
    written again through tuning_record.content, is the same bytes (keys, order, numbers)."""
    import json

    from optbench.fileio import strict_json
    from optbench.formats import tuning_record

    published = sorted((REPO / "docs").rglob("tuning-*.json"))
    assert published
    for path in published:
        again = json.dumps(strict_json(tuning_record.content(tuning_record.read(path))), indent=2)
        assert again == path.read_text().rstrip("\n"), path


# ---- benchmarks/ and scripts/ read run files through formats/ ----------------------------------------
def metric_keys() -> set[str]:
    """The metric keys formats/metrics_log.py defines (its upper-case text constants)."""
    from optbench.formats import metrics_log

    return {value for name, value in vars(metrics_log).items() if name.isupper() and isinstance(value, str)} - {
        metrics_log.WAY_OUT
    }


def raw_run_file_reads(folder: Path) -> list[str]:
    """'file: literal' for each run file name or metric key a script spells out (it reads them through formats/)."""
    spelled = set(FORMAT_OWNERS) | metric_keys()
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in spelled:
                found.append(f"{folder.name}/{path.name}: {node.value}")
    return found


@pytest.mark.parametrize("folder", ["benchmarks", "scripts"])
def test_benchmarks_and_scripts_read_run_files_only_through_formats(folder):
    assert raw_run_file_reads(REPO / folder) == []


def test_the_raw_read_check_sees_a_script_reading_summary_json_by_hand(tmp_path):
    (tmp_path / "peek.py").write_text(
        'import json\nsummary = json.load(open("summary.json"))\nprint(summary["best"]["test/acc"])\n'
    )
    assert raw_run_file_reads(tmp_path) == [
        f"{tmp_path.name}/peek.py: summary.json",
        f"{tmp_path.name}/peek.py: test/acc",
    ]


# ---- the planned-run states are spelled once, in run_states.py ----------------------------------------------
def planned_state_literals(folder: Path, owner: str = "run_states.py") -> list[str]:
    """'file: literal' for each planned-run state (new, done, ...) a module under `folder` spells as a string."""
    from optbench import run_states

    found = []
    for path in sorted(folder.rglob("*.py")):
        if path.name == owner:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in run_states.PLANNED_STATES:
                found.append(f"{path.relative_to(folder)}: {node.value}")
    return found


def test_src_optbench_spells_planned_run_states_only_in_their_vocabulary():
    assert planned_state_literals(REPO / "src" / "optbench") == []


def test_the_state_literal_check_sees_a_module_spelling_a_state(tmp_path):
    (tmp_path / "count.py").write_text('def done(runs):\n    return [run for run in runs if run.status == "done"]\n')
    assert planned_state_literals(tmp_path) == ["count.py: done"]


# ---- the aggregator's tables are written through formats/ ---------------------------------------------------
def bare_csv_writes(folder: Path) -> list[str]:
    """'file: line' for each `.to_csv(` call outside formats/ (a table's path and columns live there)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        if "formats" in path.relative_to(folder).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to_csv":
                found.append(f"{path.relative_to(folder)}: {node.lineno}")
    return found


def test_every_aggregate_table_is_written_through_formats():
    assert bare_csv_writes(REPO / "src" / "optbench") == []


def test_the_csv_write_check_sees_a_bare_to_csv(tmp_path):
    (tmp_path / "table.py").write_text('def write(frame, out):\n    out.write_text("t.csv", frame.to_csv())\n')
    assert bare_csv_writes(tmp_path) == ["table.py: 2"]
