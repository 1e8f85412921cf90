"""The device-rate caches in `$OPTBENCH_CACHE_DIR` (fastest-device.json, estimate-rates.json): one module owns
their format.

device/fastest.py writes what it timed per machine and model shape (device=fastest, device_policy.mode=measured)
and studies/estimate.py what it timed for a study's estimate; both go through `read` and `write` here. Format 1
is `{"format": 1, "entries": {key: entry}}`, where a key names the host, torch version, devices and model shape
and an entry is whatever its writer timed (a dict). A file without `format` (every cache written before this
module) is format 1's entries at the top level and reads as such. A missing, damaged or newer-format file reads
as empty: a cache only saves a measurement, so losing one costs a new timing, never a crash. Standard library
only; written atomically.
"""

import json
from pathlib import Path

from optbench.fileio import write_bytes_atomically

FORMAT = 1
FORMAT_KEY, ENTRIES_KEY = "format", "entries"


def read(path: Path) -> dict:
    """key -> entry; empty where the file is missing, damaged or newer than this optbench (measured again)."""
    try:
        content = json.loads(Path(path).read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError, IsADirectoryError):
        return {}
    if not isinstance(content, dict):
        return {}
    if FORMAT_KEY not in content:
        return content  # unversioned: format 1's entries at the top level
    entries = content.get(ENTRIES_KEY)
    return entries if content[FORMAT_KEY] == FORMAT and isinstance(entries, dict) else {}


def write(path: Path, entries: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    content = {FORMAT_KEY: FORMAT, ENTRIES_KEY: entries}
    write_bytes_atomically(path, (json.dumps(content, indent=2, sort_keys=True) + "\n").encode())
