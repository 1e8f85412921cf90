"""Every command the documentation shows in a code block runs: README.md, docs/*.md, experiments/README.md.

Each command runs as typed, in a scratch checkout: the repository's src/, conf/, experiments/, scripts/ and
Makefile linked in, its own results/ of hand-made runs (five optimizers x three seeds on CIFAR-10, where the
documented compare, aggregate and planner commands look), an empty docs/ for the outputs, absolute folders that
are not on this machine (/shared, /scratch, /content) moved into the scratch space, and `../shared/data` the real
one when it is there. A command that would train, download or run for long runs cheaply instead, by the rule
RULES gives it: its dry run (`study.py --dry-run --no-estimate`, `train.py --cfg job`, `make -n`), a tiny scale
(`device_benchmark.py --width 8`), or, where neither exists, its argument parsing (`--help`), each rule with the
test elsewhere that runs the real thing. A command no rule covers fails here, so a new one gets a rule; a page
block that is a walkthrough for code the page asks the reader to add is listed in WALKTHROUGHS.
"""

import json
import os
import queue
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO
from fixtures.aggregate.fake_runs import ramp_records, write_run

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "experiments" / "README.md"]
COMMAND = re.compile(r"^(?:\w+=\S+ )*(?:(?:\.venv/bin/)?python3? |make |optbench-|export )")
FENCE = re.compile(r"^\s*(```|~~~)")
LINKED = (
    "src",
    "conf",
    "experiments",
    "scripts",
    "tests",
    "Makefile",
    "pyproject.toml",
    "test_setup.py",
    "run_single_experiment.py",
)
# Blocks that show how to check code the page has the reader write (the optimizer its walkthrough adds).
WALKTHROUGHS = {
    "docs/adding-an-optimizer.md": "the RAdam walkthrough's checks, for the optimizer the page adds",
    "docs/your-own-optimizer.md": "the optimizer file the page has the reader write; tests/test_own_optimizer.py runs "
    "its commands on that file",
}


@dataclass(frozen=True)
class Documented:
    page: str
    line: int
    text: str
    exports: tuple = ()  # (name, value) of the `export` lines above it in its block

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text}"


def code_blocks(text: str) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of each fenced block and each indented (4-space) block."""
    blocks, fenced, current = [], False, None
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        if FENCE.match(line):
            if fenced:
                blocks.append(current)
            current, fenced = (number + 1, []) if not fenced else None, not fenced
        elif fenced:
            current[1].append(line)
        elif line.startswith("    ") and line.strip() and (current is not None or not lines[number - 2].strip()):
            current = current or (number, [])
            current[1].append(line[4:])
        elif current is not None:
            blocks.append(current)
            current = None
    return blocks + ([current] if current else [])


def documented_commands(page: Path) -> list[Documented]:
    found = []
    for start, lines in code_blocks(page.read_text()):
        exports, position = [], 0
        while position < len(lines):
            number, line = start + position, lines[position]
            while line.rstrip().endswith("\\") and position + 1 < len(lines):  # a command continued on the next line
                position += 1
                line = line.rstrip()[:-1].rstrip() + " " + lines[position].strip()
            text = re.split(r"\s+#\s", line.strip())[0].strip()
            if text.startswith("export "):
                exports.append(tuple(text.removeprefix("export ").split("=", 1)))
            elif COMMAND.match(text):
                found.append(Documented(str(page.relative_to(REPO)), number, text, tuple(exports)))
            position += 1
    return found


def all_documented() -> list[Documented]:
    return [command for page in PAGES for command in documented_commands(page)]


# ---- how each command runs here ------------------------------------------------------------------------
def study_rule(words: list[str]) -> list[str]:
    """study.py: what only reads stays; a launch becomes its dry run (no time estimate: it times the model)."""
    if {"--list", "--status", "--plan-seeds", "--select-tuned"} & set(words):
        return words
    return [*words, *(flag for flag in ("--dry-run", "--no-estimate") if flag not in words)]


def device_benchmark_rule(words: list[str]) -> list[str]:
    """The measurement itself, at width 8 and batch 8 (a few seconds on one CPU)."""
    kept = [word for word, after in zip(words, [None, *words]) if word != "--width" and after != "--width"]
    return [*kept, "--width", "8", "--batch-size", "8"]


def train_rule(words: list[str]) -> list[str]:
    """One run: Hydra prints the composed job after train.py's up-front checks (`--cfg job`). A sweep (`-m`, which
    Hydra will not combine with --cfg): train.py's up-front check of every run of it, what it does before Hydra
    starts, with nothing trained."""
    if "-m" in words or "--multirun" in words:
        check = (
            "import sys; from pathlib import Path; from optbench.config.hydra_glue import register_resolvers; "
            "from optbench.training.train_command import preflight; register_resolvers(); "
            "print(preflight(sys.argv[1:], Path('conf')), 'runs checked')"
        )
        return [words[0], "-c", check, *words[2:]]
    return words if "--cfg" in words else [*words, "--cfg", "job"]


# (entry point, how it runs here, where the real thing is tested). First match wins.
RULES = [
    ("src/study.py", study_rule, "tests/test_study.py, tests/test_tuning.py, tests/test_sequential.py"),
    ("src/train.py", lambda words: train_rule(words), "tests/test_train.py, tests/test_cli.py (real sweeps)"),
    ("run_single_experiment.py", lambda words: [*words, "--cfg", "job"], "tests/test_cli.py"),
    ("src/aggregate.py", lambda words: words, "tests/test_aggregate_cli.py"),
    ("src/compare.py", lambda words: words, "tests/test_compare.py"),
    ("src/replay.py", lambda words: [*words[:2], "--help"], "tests/test_replay.py (trains and replays)"),
    ("src/device_benchmark.py", device_benchmark_rule, "tests/test_device.py (device=fastest)"),
    ("src/download_data.py", lambda words: [*words, "--help"], "tests/test_download_data.py (a local server)"),
    ("test_setup.py", lambda words: [*words, "--help"], "tests/test_cli.py (about a minute: every optimizer)"),
    ("scripts/publish_runs.py", lambda words: words, "tests/test_publish_runs.py"),
    ("scripts/readme_study.py", lambda words: [*words, "--check"], "tests/test_cpu_study.py"),
    ("scripts/readme_fidelity.py", lambda words: [*words, "--check"], "tests/test_fidelity.py"),
    (
        "pytest",
        lambda words: [*words, "--collect-only", "-n", "0", "tests/test_durations.py"],
        "this suite (its options, collecting one file in one process)",
    ),
    ("make", lambda words: [words[0], "-n", *words[1:]], "make test is this suite; make quick is a training run"),
]
# Commands whose documented outcome, on the scratch checkout, is a refusal: (exit status, what stderr says).
REFUSED = {
    "python src/study.py --select-tuned tune_quasirandom": (2, "the top-k reruns have not run yet"),
    "python src/study.py full --tuned": (2, "no tuned config for sgd"),
}


def entry_point(words: list[str]) -> str:
    if words[0] == "make":
        return "make"
    if words[1:3] == ["-m", "pytest"]:
        return "pytest"
    return words[1]


def runnable(command: Documented, scratch: Path) -> tuple[list[str], dict]:
    """The argv and environment the command runs with here."""
    text = re.sub(r"\s\[--[^\]]*\]", "", command.text)  # a synopsis' optional parts: `[--out DIR]`
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment.update(USER="someone", PWD=str(scratch), OPTBENCH_CACHE_DIR=str(scratch / "cache"))
    for name, value in command.exports:
        environment[name] = moved(value, scratch)
    text = re.sub(r"\$(\w+)", lambda match: environment.get(match.group(1), match.group(0)), moved(text, scratch))
    words = shlex.split(text)
    while re.match(r"^\w+=", words[0]):  # `PYTHONPATH=$PWD/src python ...`
        name, _, value = words.pop(0).partition("=")
        environment[name] = value
    if words[0] in ("python", "python3", ".venv/bin/python"):
        words[0] = sys.executable
    rule = next(run for name, run, _ in RULES if name == entry_point(words))
    return rule(words), environment


def moved(text: str, scratch: Path) -> str:
    """Absolute folders this machine lacks (/shared/..., /scratch/..., /content/...) moved into the scratch space."""

    def into_scratch(match: re.Match) -> str:
        top = match.group(1)
        return match.group(0) if Path("/", top).exists() else f"{scratch}/root/{top}/"

    return re.sub(r"(?<![\w.:/])/([\w.-]+)/", into_scratch, text)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A checkout to run documented commands in: the code linked, its own results and docs."""
    top = tmp_path_factory.mktemp("documented")
    checkout = top / "checkout"
    checkout.mkdir()
    for name in LINKED:
        (checkout / name).symlink_to(REPO / name)
    (checkout / "docs").mkdir()
    if (REPO.parent / "shared").is_dir():  # ../shared/data/cifar10-jpeg, as from a checkout under /work
        (top / "shared").symlink_to(REPO.parent / "shared")
    for results in ("results", "results/cpu-demo", "results/human-noise"):
        for optimizer, accuracy in {"sgd": 0.90, "adam": 0.89, "adamw": 0.91, "lion": 0.88, "muon": 0.92}.items():
            for seed in range(3):
                write_run(checkout / results, ramp_records(accuracy - 0.01 * seed), optimizer=optimizer, seed=seed)
    return checkout


def test_the_commands_are_found():
    texts = {command.text for command in all_documented()}
    assert {
        "python src/train.py optimizer=lion",
        "python src/study.py --list",
        "make test",
        "python src/download_data.py cifar10 cifar100",
    } <= texts
    clusters = [command for command in all_documented() if command.page == "docs/clusters.md"]
    assert clusters[0].exports == (("OPTBENCH_DATA_DIR", "/shared/optbench/data"),)
    assert "--launcher slurm --set hydra.launcher.partition=gpu" in clusters[-1].text  # joined across `\`


def test_every_command_has_a_rule():
    ruled = {name for name, _, _ in RULES}
    unruled = [
        str(command)
        for command in all_documented()
        if command.page not in WALKTHROUGHS
        and entry_point(shlex.split(re.sub(r"^(\w+=\S+ )+", "", command.text))) not in ruled
    ]
    assert unruled == []


def distinct_runs(scratch: Path) -> dict[tuple, list[Documented]]:
    """(argv, environment) -> the documented commands that run as it: each distinct run once."""
    runs = {}
    for command in all_documented():
        if command.page not in WALKTHROUGHS:
            argv, environment = runnable(command, scratch)
            runs.setdefault((tuple(argv), tuple(sorted(environment.items()))), []).append(command)
    return runs


# src/study.py is `sys.exit(main(sys.argv[1:]))`: a study command runs as that main in a process kept for many of
# them, so the imports are paid once per process, not per command, with src/ first on the path as `python
# src/study.py` has it. Planning a study composes each of its runs with Hydra, and several documented commands
# plan the same study (a dry run, its --status, another launcher, a rung): the process composes each (conf/,
# overrides) once and hands every later command a copy. The same process, directory and environment compose the
# same config, so this changes no command's outcome; it spares most of the test's time.
STUDY_RUNNER = """
import contextlib, copy, io, json, sys, traceback
sys.path.insert(0, "src")
import hydra
from hydra.core.global_hydra import GlobalHydra
import optbench
from optbench.studies.study_command import main

compose, composed = hydra.compose, {}

def compose_once(config_name=None, overrides=None, return_hydra_config=False, strict=None):
    sources = tuple(source.path for source in GlobalHydra.instance().config_loader().get_sources())
    key = (sources, config_name, tuple(overrides or ()), return_hydra_config, strict)
    if key not in composed:
        composed[key] = compose(config_name, list(overrides or ()), return_hydra_config, strict)
    return copy.deepcopy(composed[key])

hydra.compose = compose_once
for line in sys.stdin:
    argv, errors = json.loads(line), io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(errors):
        try:
            status = main(argv)
        except SystemExit as stop:
            status = stop.code
        except Exception:
            traceback.print_exc()
            status = 1
    print(json.dumps([status, errors.getvalue()]), flush=True)
"""


class Runner:
    """One worker: study commands with the common environment through its own STUDY_RUNNER process, every other
    command as a process of its own."""

    def __init__(self, scratch: Path, environment: dict):
        self.scratch, self.environment = scratch, environment
        self.studies = subprocess.Popen(
            [sys.executable, "-c", STUDY_RUNNER],
            cwd=scratch,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, argv: tuple, environment: tuple) -> tuple[int, str]:
        if argv[1] == "src/study.py" and dict(environment) == self.environment:
            self.studies.stdin.write(json.dumps(list(argv[2:])) + "\n")
            self.studies.stdin.flush()
            return tuple(json.loads(self.studies.stdout.readline()))
        done = subprocess.run(
            list(argv), cwd=self.scratch, env=dict(environment), capture_output=True, text=True, timeout=300
        )
        return done.returncode, done.stderr

    def close(self) -> None:
        self.studies.stdin.close()
        self.studies.wait(timeout=60)


def outcome(runner: Runner, argv: tuple, environment: tuple, commands: list[Documented]) -> str | None:
    """None when the run ends as its commands are documented to; else what went wrong."""
    returncode, stderr = runner.run(argv, environment)
    status, says = REFUSED.get(commands[0].text, (0, ""))
    if returncode == status and says in stderr:
        return None
    return f"{commands[0]} -> exit {returncode}: {stderr.strip()[-400:]}"


@pytest.mark.extended
@pytest.mark.slow
def test_every_documented_command_runs(scratch):
    common = runnable(Documented("", 0, "python src/study.py --list"), scratch)[1]
    studies, others = queue.SimpleQueue(), queue.SimpleQueue()
    for run in distinct_runs(scratch).items():
        (argv, environment), _ = run
        (studies if argv[1] == "src/study.py" and dict(environment) == common else others).put(run)

    def work(worker: int) -> list[str | None]:  # one per core: most of the time goes to Hydra composing studies
        # The first worker takes the study commands, so its runner composes each study's runs once for all of
        # them (STUDY_RUNNER); the others take the rest, then any study command still waiting.
        runner, failed = Runner(scratch, common), []
        try:
            for pending in (studies, others) if worker == 0 else (others, studies):
                while True:
                    try:
                        (argv, environment), commands = pending.get_nowait()
                    except queue.Empty:
                        break
                    failed.append(outcome(runner, argv, environment, commands))
            return failed
        finally:
            runner.close()

    workers = os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=workers) as pool:
        failed = [line for lines in pool.map(work, range(workers)) for line in lines if line]
    assert failed == []
