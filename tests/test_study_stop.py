"""Ctrl-C, SIGINT or SIGTERM to `python src/study.py`, in the foreground or in the background, stops the whole
study: the running sweep stops with a checkpoint (its run resumable, status interrupted), no later sweep starts and
nothing is relaunched, and the study says so in one line, exit 128 + the signal (issue 56, item 6)."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import REPO
from test_study import SMALL, synthetic_grid, write_study


def started_in_background(argv: list[str], cwd) -> subprocess.Popen:
    """As a shell's `&` starts a job: SIGINT ignored (inherited), in a process group of its own."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        process_group=0,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )


def lines_until(process: subprocess.Popen, wanted: str, seconds: float = 180) -> list[str]:
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if wanted in line:
            return seen
    pytest.fail(f"never saw {wanted!r}: {''.join(seen)[-3000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_a_background_study_stops_it_whole_with_every_run_resumable(tmp_path, signum):
    study = write_study(tmp_path / "long.yaml", synthetic_grid(optimizer=["sgd", "adam"], seed=[0], epochs=300))
    results = tmp_path / "results"
    argv = [sys.executable, str(REPO / "src" / "study.py"), str(study), "--set", *SMALL]
    argv += [f"paths.results_dir={results}", f"paths.data_dir={tmp_path / 'data'}"]
    process = started_in_background(argv, tmp_path)
    try:
        before = lines_until(process, "epoch 2/300")
        process.send_signal(signum)  # to the study's process alone, as `kill -INT PID` sends it
        rest, _ = process.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever is left of the study's group: never a stray trainer
    output = "".join(before) + rest
    name = signal.Signals(signum).name
    assert process.returncode == 128 + signum, output[-3000:]
    stopped = [line for line in output.splitlines() if "stopped by" in line]
    assert stopped == [
        f"study long: stopped by {name}: every run is resumable (a stopped run keeps its checkpoint); "
        "run the same command again to resume"
    ], output[-3000:]
    assert output.count("sweep 1:") == 1 and "sweep 2:" not in output  # nothing relaunched, no later sweep
    summaries = [json.loads(path.read_text()) for path in results.rglob("summary.json")]
    assert [summary["status"] for summary in summaries] == ["interrupted"], output[-3000:]
    assert list(results.rglob("checkpoint.pt"))
