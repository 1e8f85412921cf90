"""Generic file helpers every format module shares: strict JSON, atomic writes, one JSON reader, locks.

Standard library only. `write_atomically` writes a temporary sibling, fsyncs it and renames it over the
target, so a crash leaves the old file or the new one, never a torn one. `json_text` turns NaN and
infinities into null, so every file stays valid JSON for any reader. `read_json` follows the one error
policy of the run files: missing reads as None, present but unreadable raises DamagedRunFile naming the
file and the way out. `exclusive_lock` / `is_locked` are the flock a trainer holds on a run directory.
"""

import contextlib
import fcntl
import functools
import hashlib
import json
import math
import os
import platform
from pathlib import Path

from optbench.errors import DamagedRunFile


def strict_json(value):
    """NaN and infinities (a diverged run's loss) become null: the files stay valid JSON for any reader."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    return value


def json_text(value, indent: int | None = 2) -> str:
    return json.dumps(strict_json(value), indent=indent, sort_keys=indent is not None, allow_nan=False)


def write_atomically(path: Path, write) -> None:
    """Call `write(binary_file)` on a temporary sibling of `path`, fsync it, then rename it over `path`:
    a crash at any moment leaves the old file or the new one, never a torn one."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(temporary, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_bytes_atomically(path: Path, payload: bytes) -> None:
    write_atomically(path, lambda handle: handle.write(payload))


def write_new(path: Path, payload: bytes) -> None:
    """Create `path` with `payload`, fsynced; FileExistsError when it exists (a file written once, never replaced)."""
    with open(path, "xb") as handle:
        handle.write(payload)
        handle.flush()
        os.fsync(handle.fileno())


def read_json(path: Path, way_out: str) -> dict | None:
    """The JSON object in `path`; None when the file is missing; DamagedRunFile when it cannot be read."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise DamagedRunFile(f"{path} cannot be read ({type(error).__name__}): {way_out}") from error
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise DamagedRunFile(f"{path} is damaged ({error}): {way_out}") from error
    if not isinstance(value, dict):
        raise DamagedRunFile(f"{path} is not a JSON object: {way_out}")
    return value


@contextlib.contextmanager
def exclusive_lock(lock_path: Path, busy):
    """Hold an exclusive flock on `lock_path` (created if missing) for the block, with this process named in
    it; when another process holds it, raise `busy(holder)` at once. The kernel drops it when its holder dies."""
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise busy(handle.read().strip() or "another process") from None
        handle.truncate(0)
        handle.write(f"pid {os.getpid()} on {platform.node()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_locked(lock_path: Path) -> bool:
    """True while a process holds `lock_path`'s exclusive flock. A read-only probe: nothing is created or
    written; the shared lock it takes for a moment only succeeds when no one holds the exclusive one."""
    try:
        handle = open(lock_path, "rb")
    except (FileNotFoundError, NotADirectoryError):
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def md5_of(path: str | Path) -> str:
    """The file's md5 (hex); computed once per version of the file in a process (a study checks one label file
    for each of its hundreds of runs)."""
    resolved = Path(path).resolve()
    facts = resolved.stat()
    return _md5_of(str(resolved), facts.st_size, facts.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _md5_of(path: str, size: int, mtime_ns: int) -> str:  # size and mtime: a changed file is read again
    return hashlib.md5(Path(path).read_bytes()).hexdigest()
