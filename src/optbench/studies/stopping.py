"""A study stops whole: Ctrl-C, SIGINT or SIGTERM to `python src/study.py`, in the foreground or the background.

A sweep runs as its own process group (`run_sweep`), so a signal reaches it once, from the study, whoever sent it:
a terminal's Ctrl-C (the study's foreground group), `kill -INT PID` to a background study (whose SIGINT a shell's
`&` left ignored), or SIGTERM. Inside `stops_whole()` the study's handler passes each signal on to the running
sweep, which checkpoints its run and exits (training/signals.py); once it has, or at once between sweeps, the
study raises `StudyStopped`: no later sweep starts and nothing is relaunched (`--until-decided` included), and the
command line says so in one line (`stopped_line`). Every run is then resumable: a stopped run kept its checkpoint,
and the others were not started. Outside the main thread signals cannot be caught, and a sweep runs as before.
"""

import contextlib
import os
import signal
import subprocess
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StudyStopped(Exception):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Stops:
    """The study's stop signals: the first one received, and the sweep running now (passed each signal on)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.sweep: subprocess.Popen | None = None
        self.launching = False  # a sweep is starting or running: the study stops once it has stopped

    def handle(self, signum: int, frame) -> None:
        self.signum = self.signum or signum
        if not self.launching:
            raise StudyStopped(self.signum)
        self.pass_on(signum)

    def pass_on(self, signum: int) -> None:
        if self.sweep is not None and self.sweep.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # it ended as the signal came
                os.killpg(self.sweep.pid, signum)


_active: list[Stops] = []  # the Stops of the study running in this process (stops_whole), if any


@contextlib.contextmanager
def stops_whole():
    """While the study runs: its stop signals handled by one Stops (StudyStopped, after the sweep stopped)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = Stops()
    previous = {signum: signal.signal(signum, stops.handle) for signum in STOP_SIGNALS}
    _active.append(stops)
    try:
        yield
    finally:
        _active.remove(stops)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_sweep(command: list[str], cwd: str, env: dict[str, str]) -> int:
    """Run one sweep's command as its own process group and wait for it; StudyStopped when a stop signal came."""
    if not _active:
        return subprocess.call(command, cwd=cwd, env=env)
    stops = _active[-1]
    stops.launching = True
    try:
        stops.sweep = subprocess.Popen(command, cwd=cwd, env=env, process_group=0)
        if stops.signum is not None:  # it came while the sweep was starting
            stops.pass_on(stops.signum)
        status = stops.sweep.wait()
    finally:
        stops.launching, stops.sweep = False, None
    if stops.signum is not None:
        raise StudyStopped(stops.signum)
    return status


def stopped_line(study_id: str, stopped: StudyStopped) -> str:
    return (
        f"study {study_id}: stopped by {signal.Signals(stopped.signum).name}: every run is resumable (a stopped run "
        "keeps its checkpoint); run the same command again to resume"
    )
