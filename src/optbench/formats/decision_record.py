"""The decision record of a study run until decided: `sequential-<study>.json` beside the study's runs.

One module owns the format; the study runner (studies/until_decided.py) writes it and anyone may read it.
Standard library only. Written once per look, atomically (a temporary file, then os.replace), never
rewritten: a look's decisions are appended, and a hypothesis decided at one look keeps that decision at
every later one, so it is never re-decided on more data.

    {"format": 1, "study": "cpu_demo", "alpha": 0.05, "looks": [3, 6, 10],
     "rule": "...", "hypotheses": {"H2": {"comparisons": 4, "efficacy": [...], "rejection": [...]}},
     "decisions": [{"look": 0, "seeds": 3, "date": "...",
                    "hypotheses": {"H2": {"decision": "continue", "reason": "...", "conditional_power": 0.4,
                                          "z": {"imagefolder, clean: sgd vs adam": -1.2},
                                          "n": {"imagefolder, clean: sgd vs adam": 3}}}}]}
    ("n": the seeds each comparison's test used at that look; records written before it have none.)
"""

import datetime
import json
import os
from pathlib import Path

from optbench.errors import ConfigError
from optbench.formats.fields import Fields

FORMAT = 1
PREFIX = "sequential-"
WAY_OUT = "restore it from a backup; deleting it would let the study re-decide on more data"


def record_path(results_dir: Path, study_id: str) -> Path:
    return Path(results_dir) / f"{PREFIX}{study_id}.json"


def find_records(results_dir: Path, skip: Path | None = None) -> list[Path]:
    """Every decision record below `results_dir`, sorted; those inside `skip` (an output folder) are not."""
    skip = Path(skip).resolve() if skip else None
    return sorted(
        path
        for path in Path(results_dir).rglob(f"{PREFIX}*.json")
        if skip is None or skip not in path.resolve().parents
    )


def new_record(study_id: str, looks: tuple[int, ...], alpha: float, rule: str, hypotheses: dict) -> dict:
    return {
        "format": FORMAT,
        "study": study_id,
        "alpha": alpha,
        "looks": list(looks),
        "rule": rule,
        "hypotheses": hypotheses,
        "decisions": [],
    }


def read(path: Path) -> dict | None:
    """The record, or None when there is none yet; a damaged one is one line naming the file and the fix."""
    if not Path(path).is_file():
        return None
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(
            f"{path} is not a readable decision record ({type(error).__name__}): restore it from a "
            f"backup; deleting it would let the study re-decide on more data"
        ) from None
    check(record, path)
    return record


def check(record, path: Path) -> None:
    """The schema: a JSON object of format <= FORMAT whose `decisions` are looks, each with its `look`,
    `seeds` and per hypothesis a `decision`; DamagedRunFile (a ConfigError) naming the first field off it."""
    fields = Fields(record, path, way_out=WAY_OUT)
    fields.version(FORMAT)
    fields.text("study", required=True)
    for position, look in enumerate(fields.listing("decisions", required=True)):
        look_fields = Fields(look, path, f"decisions[{position}]", WAY_OUT)
        look_fields.whole("look", required=True)
        look_fields.whole("seeds", required=True, low=1)
        hypotheses = look_fields.inner("hypotheses", required=True)
        for name in hypotheses.value:
            hypotheses.inner(name, required=True).text("decision", required=True)


def write(path: Path, record: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def add_look(record: dict, look: int, seeds: int, decisions: dict) -> dict:
    """The record with one more look; a hypothesis already stopped keeps its earlier decision."""
    kept = {name: entry for name, entry in stopped(record).items()}
    entry = {
        "look": look,
        "seeds": seeds,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "hypotheses": {**decisions, **kept},
    }
    return {**record, "decisions": [*record["decisions"], entry]}


def stopped(record: dict) -> dict:
    """Hypotheses with a final decision, and that decision's entry (from the look that took it)."""
    final = {}
    for look in record["decisions"]:
        for name, entry in look["hypotheses"].items():
            if name not in final and entry["decision"] != "continue":
                final[name] = entry
    return final


def looks_done(record: dict) -> int:
    return len(record["decisions"])
