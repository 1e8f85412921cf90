"""Error types the entry points map to exit codes.

`ConfigError` means the user asked for something that cannot work (bad value, missing data,
unknown name). Its message is one line that names the fix; the CLI prints it and exits with
status 2 before any run directory is made to look complete. `OutOfMemory` means the device ran
out of memory: one line with the failing batch size and what to try; exit status 3.
"""


class ConfigError(ValueError):
    """Bad configuration or input: one line naming the fix; exit status 2."""


class OutOfMemory(RuntimeError):
    """The device ran out of memory: one line naming the failing size and the fix; exit status 3."""


class RunDirectoryBusy(RuntimeError):
    """Another live process holds the run directory's lock; exit status 2, and its files are left alone."""


class RunInterrupted(RuntimeError):
    """SIGTERM or SIGINT stopped the run after a checkpoint; exit status 128 + the signal number."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum
