"""submitit's SlurmLauncher, with a refused or unreachable sbatch answered in one line and exit status 2.

When sbatch cannot reach a cluster, or refuses the job (`Invalid generic resource (gres) specification`
on a cluster without GPUs), hydra-submitit-launcher ends in a submitit traceback some 40 lines long.
This launcher (conf/hydra/launcher/slurm.yaml names it) lets the same launch run, and only when the
submission itself fails prints `error: <sbatch's complaint>: <the likely fix>`
(optbench.studies.launchers.sbatch_error_line) and exits 2: bad input, as every other refusal. A job
that fails later, on the cluster, is not this: the runs' summaries name it.
"""

import contextlib
import io
import subprocess
import sys

from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from optbench.errors import EXIT_BAD_INPUT
from optbench.studies.launchers import sbatch_error_line


class CheckedSlurmLauncher(SlurmLauncher):
    def launch(self, job_overrides, initial_job_idx):
        try:
            with _sbatch_output_held():
                return super().launch(job_overrides, initial_job_idx)
        except FileNotFoundError as error:  # no sbatch on this machine
            complaint = f"{error.filename or 'sbatch'} not found"
        except Exception as error:  # submitit.core.utils.FailedJobError, raised from sbatch's CalledProcessError
            cause = error.__cause__
            if isinstance(cause, subprocess.CalledProcessError) and "sbatch" in str(cause.cmd):
                complaint = str(cause.stderr or cause.output or error)
            elif isinstance(error, RuntimeError) and "srun" in str(error):  # submitit: no SLURM tools on this machine
                complaint = str(error)
            else:
                raise
        print(f"error: {sbatch_error_line(complaint)}", file=sys.stderr, flush=True)
        # Hydra turns any exception into a traceback; SystemExit passes through it (an entry point's exit).
        sys.exit(EXIT_BAD_INPUT)


@contextlib.contextmanager
def _sbatch_output_held():
    """While submitit runs sbatch, hold what it prints to stderr (it echoes sbatch's complaint before raising):
    replayed when sbatch succeeds, replaced by the one error line when it fails."""
    from submitit.core import utils

    original = utils.CommandFunction.__call__

    def held(self, *args, **kwargs):
        buffer = io.StringIO()
        with contextlib.redirect_stderr(buffer):
            result = original(self, *args, **kwargs)
        sys.stderr.write(buffer.getvalue())
        return result

    # patched on the class for the length of the block (submitit builds its own CommandFunction)
    utils.CommandFunction.__call__ = held  # type: ignore[method-assign]
    try:
        yield
    finally:
        utils.CommandFunction.__call__ = original  # type: ignore[method-assign]
