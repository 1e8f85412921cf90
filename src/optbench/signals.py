"""Graceful stops: SIGTERM (SLURM preemption, Colab, `kill`) and SIGINT (Ctrl-C) ask the run to stop.

Inside `stop_requests()` the first such signal only records itself; the training loop checks
`requests.signal` between steps, checkpoints, marks the run `interrupted` and exits with status
128 + the signal number (130 for Ctrl-C, 143 for SIGTERM). A second Ctrl-C stops at once, for
the impatient. Outside the main thread (some launchers) signals cannot be caught and nothing changes.
"""

import contextlib
import logging
import signal
import threading

log = logging.getLogger(__name__)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


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
