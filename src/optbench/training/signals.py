"""Graceful stops: SIGTERM (SLURM preemption, Colab, `kill`), SIGINT (Ctrl-C) and SIGUSR2 (SLURM's
warning before a time limit, as submitit asks for it) ask the run to stop.

Inside `stop_requests()` the first such signal only records itself; the training loop checks
`requests.signal` between steps, checkpoints, marks the run `interrupted` and exits with status
128 + the signal number (130 for Ctrl-C, 143 for SIGTERM). A second Ctrl-C stops at once, for
the impatient. When the context ends, a Python handler that was installed before (submitit's
SIGUSR2 handler, which requeues the job) is called with the signal, so the launcher still does its
part, after the checkpoint. Outside the main thread signals cannot be caught and nothing changes.
"""

import contextlib
import logging
import signal
import threading

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR2)


class StopRequests:
    def __init__(self):
        self.signal: int | None = None  # the first stop signal received, if any

    def handle(self, signum: int, frame) -> None:
        if self.signal == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt  # second Ctrl-C: stop now
        self.signal = self.signal or signum
        log.warning("%s received: stopping after this step, with a checkpoint", signal.Signals(signum).name)


@contextlib.contextmanager
def stop_requests():
    requests = StopRequests()
    if threading.current_thread() is not threading.main_thread():
        yield requests
        return
    previous = {signum: signal.signal(signum, requests.handle) for signum in STOP_SIGNALS}
    try:
        yield requests
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _pass_on(requests.signal, previous)


def _pass_on(signum: int | None, previous: dict) -> None:
    """Give a launcher's own handler the signal we held back (Python's Ctrl-C handler excepted)."""
    handler = previous.get(signum)
    if signum is not None and callable(handler) and handler is not signal.default_int_handler:
        log.info("passing %s on to the handler installed before the run", signal.Signals(signum).name)
        handler(signum, None)
