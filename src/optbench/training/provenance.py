"""What produced a result: library versions and the git state of the harness code.

Recorded in every summary.json so a number can always be traced to the code that made it.
"""

import platform
import subprocess
from importlib import metadata
from pathlib import Path

from optbench.registry import optimizers

# torch and the optimizers' libraries (the registry's), whose versions can change a run's numbers
LIBRARIES = tuple(dict.fromkeys(("torch", "torchvision", *optimizers.libraries(), "hydra-core", "numpy")))


def library_versions() -> dict[str, str | None]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_state() -> dict[str, str | bool | None]:
    """Commit of the checkout this package runs from, and whether it has uncommitted changes."""
    source_dir = Path(__file__).resolve().parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(source_dir), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}
