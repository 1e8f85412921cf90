"""Error types and the exit codes the entry points map them to (standard library only).

`ConfigError` means the user asked for something that cannot work (bad value, missing data, unknown
name, a run directory holding another experiment). Its message is one line that names the fix; the
entry points print it as `error: ...` and exit with status 2, having changed nothing on disk.
`OutOfMemory` means the device ran out of memory: one line with the failing batch size and what to
try; exit status 3. Library code raises these; only the entry points (src/*.py) call sys.exit.
`did_you_mean(given, known)` words the closest known name for a message about a misspelt one.
"""

import difflib

EXIT_OK = 0  # completed or diverged: a result
EXIT_FAILED = 1  # any other failure (recorded as failed in summary.json)
EXIT_BAD_INPUT = 2  # bad configuration or input, as one line naming the fix
EXIT_OUT_OF_MEMORY = 3  # the device ran out of memory
EXIT_SIGNAL_BASE = 128  # stopped by a signal after a checkpoint: 128 + its number (130 Ctrl-C, 143 SIGTERM)


def did_you_mean(given: str, known, spelled=lambda name: name) -> str:
    """`did you mean NAME? ` with the known name closest to `given` (case ignored; `spelled` words it, e.g. as
    `optimizer=lion`), or '' when none is close."""
    by_lower = {str(name).lower(): str(name) for name in known}
    close = difflib.get_close_matches(str(given).lower(), list(by_lower), n=1, cutoff=0.6)
    return f"did you mean {spelled(by_lower[close[0]])}? " if close else ""


class ConfigError(ValueError):
    """Bad configuration or input: one line naming the fix; exit status 2."""


class DamagedRunFile(ConfigError):
    """A run directory's file cannot be read (torn, edited, not JSON): names the file and the way out."""


class OutOfMemory(RuntimeError):
    """The device ran out of memory: one line naming the failing size and the fix; exit status 3."""


class RunDirectoryBusy(RuntimeError):
    """Another live process holds the run directory's lock; exit status 2, and its files are left alone."""


class RunInterrupted(RuntimeError):
    """SIGTERM, SIGINT or SIGUSR2 stopped the run after a checkpoint; exit status 128 + the signal number."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum
