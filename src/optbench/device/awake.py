"""Keep a Mac awake while it trains: `caffeinate -i -w <pid>` held for the life of a run (macOS only).

A sleeping laptop stops a run for hours without a word. `caffeinate -i` prevents idle sleep while it
runs, and `-w <pid>` makes it end by itself when the training process exits, even on a crash or a
kill; `kept_awake` also stops it when the run ends, so a notebook kernel that trains again does not
collect them. The policy setting `keep_awake` (device_policy.keep_awake, default on on macOS) decides
it; `keep_awake_command` is pure, so a test checks the command on any platform.
"""

import contextlib
import logging
import os
import subprocess
import sys

log = logging.getLogger(__name__)


def keep_awake_command(pid: int, platform: str = sys.platform) -> list[str] | None:
    """The command that keeps this machine awake until process `pid` exits; None where there is none (not macOS)."""
    if platform != "darwin":
        return None
    return ["caffeinate", "-i", "-w", str(pid)]


@contextlib.contextmanager
def kept_awake(enabled: bool, platform: str = sys.platform, start=subprocess.Popen):
    """Hold caffeinate while the block runs (yields its process, or None when nothing was started).

    `start`: how to start the command (subprocess.Popen; a test passes a recorder)."""
    command = keep_awake_command(os.getpid(), platform) if enabled else None
    if command is None:
        yield None
        return
    try:
        process = start(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError as error:  # no caffeinate on PATH: train anyway, and say the Mac may sleep
        log.warning("could not start %s (%s): the Mac may sleep while training", " ".join(command), error)
        yield None
        return
    try:
        yield process
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
