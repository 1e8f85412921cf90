"""record.json: the harness's own record of a run, written once when it starts and never rewritten.

It holds the full resolved config, the run's identity (optbench.identity) and its hash `run_id`, and
when it was created. Readers use it, not Hydra's `.hydra/`. The schema is `RunRecord`; `read(run_dir)`
follows the run files' one error policy (missing: None; unreadable, a field missing or of the wrong type,
a newer format: DamagedRunFile naming the file, the field and the way out).
"""

from dataclasses import dataclass
from pathlib import Path

from optbench import rundir
from optbench.errors import DamagedRunFile
from optbench.fileio import json_text, read_json, write_new
from optbench.formats.fields import Fields
from optbench.identity import run_id

FORMAT = 1
WAY_OUT = "move this run directory away, or train.rerun=true to start it over"


@dataclass(frozen=True)
class RunRecord:
    version: int
    run_id: str
    created: str
    identity: dict  # {"config": numbers-changing settings, "data": the data's fingerprint}
    data_fingerprint: str | None  # identity.data: the content fingerprint of the data the run trained on
    config: dict  # the full resolved config, nested as Hydra composed it


def new_record(resolved_config: dict, run_identity: dict, created: str) -> dict:
    return {
        "format": FORMAT,
        "run_id": run_id(run_identity),
        "created": created,
        "identity": run_identity,
        "config": resolved_config,
    }


def path_in(run_dir: Path) -> Path:
    return Path(run_dir) / rundir.RECORD_FILE


def read(run_dir: Path) -> RunRecord | None:
    content = read_json(path_in(run_dir), WAY_OUT)
    return None if content is None else parse(content, path_in(run_dir))


def parse(content: dict, path: Path) -> RunRecord:
    fields = Fields(content, path, way_out=WAY_OUT)
    identity = fields.inner("identity", required=True)
    return RunRecord(
        version=fields.version(FORMAT),
        run_id=fields.text("run_id", required=True),
        created=fields.text("created", required=True),
        identity=identity.value,
        data_fingerprint=identity.text("data"),
        config=fields.mapping("config", required=True),
    )


def recorded_data(level: Path) -> str | None:
    """The data fingerprint recorded by the first readable run below a dataset level (all its runs share it);
    a damaged record is passed over (another run of the level says the same)."""
    for path in sorted(Path(level).glob(f"**/{rundir.RECORD_FILE}")):
        try:
            record = read(path.parent)
        except DamagedRunFile:
            continue
        if record is not None and record.data_fingerprint is not None:
            return record.data_fingerprint
    return None


def write(run_dir: Path, record: dict) -> None:
    """Written once: an existing record is never replaced (a fresh start removes it first)."""
    write_new(path_in(run_dir), (json_text(record) + "\n").encode())
