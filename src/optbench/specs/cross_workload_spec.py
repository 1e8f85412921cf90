"""The cross-workload study's parts file as data: experiments/cross-workload/parts.yaml -> CrossWorkload.

A cross-workload study compares the same optimizers on several workloads, each trained by its own study. The parts
file names, per workload, the study whose runs are that workload's part (and, for a fidelity ladder, the rung:
`rung: {epochs: 16}` is cpu_fidelity's top rung, read as `study.py --rung epochs=16` reads it), any earlier tuning
records whose trials also cost hours, and the claims judged across workloads, each a hypothesis id per workload
(hypothesis files in the `hypotheses/` folder beside the parts file). `load_parts(path)` parses and checks it;
`part_study(part)` is the study as it runs at the part's rung (no rungs left: its grid, overrides and tuning).
A malformed file, an unknown workload or study, a claim naming a workload no part has: one ConfigError line.
Standard library and PyYAML only.
"""

from dataclasses import dataclass
from pathlib import Path

import yaml

from optbench.errors import ConfigError, did_you_mean
from optbench.registry import workloads
from optbench.specs.study_spec import EXPERIMENTS_DIR, REPO, Study, find_study, only_rung, study_at_rung

PARTS_FILE = EXPERIMENTS_DIR / "cross-workload" / "parts.yaml"
FILE_KEYS = ("optimizers", "parts", "claims")
PART_KEYS = ("workload", "study", "rung", "earlier_tuning")
CLAIM_KEYS = ("id", "title", "hypotheses")


@dataclass(frozen=True)
class Part:
    workload: str  # a registry workload (registry/workloads.py)
    study: str  # the study whose runs are this workload's part
    rung: tuple[str, ...] = ()  # budget overrides of one of its rungs (`epochs=16`); () for a study without a ladder
    earlier_tuning: tuple[Path, ...] = ()  # tuning records of earlier searches (paths from the repository root)

    @property
    def rung_text(self) -> str:
        return ",".join(self.rung)


@dataclass(frozen=True)
class Claim:
    id: str
    title: str
    hypotheses: dict[str, str]  # workload -> the id of its part's hypothesis


@dataclass(frozen=True)
class CrossWorkload:
    source: Path
    optimizers: tuple[str, ...]
    parts: tuple[Part, ...]
    claims: tuple[Claim, ...]

    @property
    def workloads(self) -> list[str]:
        return [part.workload for part in self.parts]

    @property
    def hypotheses_dir(self) -> Path:
        """The experiments folder whose hypotheses/ holds the claims' parts: the parts file's own folder."""
        return self.source.parent


def load_parts(path: Path = PARTS_FILE) -> CrossWorkload:
    """The parts file, checked (ConfigError naming the file and the fix)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such parts file: give the cross-workload parts file, e.g. {PARTS_FILE}")
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: a parts file is a mapping of {', '.join(FILE_KEYS)}")
    refuse_unknown(path, document, FILE_KEYS, "")
    optimizers = names_list(path, document.get("optimizers"), "optimizers")
    parts = tuple(parse_part(path, entry) for entry in entries(path, document.get("parts"), "parts"))
    repeated = sorted({part.workload for part in parts if [p.workload for p in parts].count(part.workload) > 1})
    if repeated:
        raise ConfigError(f"{path}: workload {repeated[0]} has two parts: give each workload one study")
    claims = tuple(
        parse_claim(path, entry, [part.workload for part in parts]) for entry in claim_entries(path, document)
    )
    return CrossWorkload(path, optimizers, parts, claims)


def refuse_unknown(path: Path, mapping: dict, known: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(mapping) - set(known))
    if unknown:
        raise ConfigError(
            f"{path}: unknown key `{where}{unknown[0]}`: {did_you_mean(unknown[0], known)}use {', '.join(known)}"
        )


def names_list(path: Path, value, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(name, str) for name in value):
        raise ConfigError(f"{path}: {key} lists names, e.g. {key}: [sgd, adam, adamw, lion, muon]")
    return tuple(value)


def entries(path: Path, value, key: str) -> list[dict]:
    if not isinstance(value, list) or not value or not all(isinstance(entry, dict) for entry in value):
        raise ConfigError(f"{path}: {key} is a list of mappings, e.g. - {{workload: mnist1d, study: cross_mnist1d}}")
    return value


def claim_entries(path: Path, document: dict) -> list[dict]:
    value = document.get("claims") or []
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        raise ConfigError(
            f"{path}: claims is a list of mappings: - {{id: X1, title: ..., hypotheses: {{mnist1d: X1-mnist1d}}}}"
        )
    return value


def parse_part(path: Path, entry: dict) -> Part:
    refuse_unknown(path, entry, PART_KEYS, "parts.")
    workload, study = entry.get("workload"), entry.get("study")
    if not isinstance(workload, str) or not isinstance(study, str):
        raise ConfigError(
            f"{path}: each part names its workload and study, e.g. {{workload: mnist1d, study: cross_mnist1d}}"
        )
    workloads.describe(workload)  # an unknown workload: one line naming the closest
    rung = entry.get("rung") or {}
    if not isinstance(rung, dict) or not all(not isinstance(value, (dict, list)) for value in rung.values()):
        raise ConfigError(f"{path}: part {workload}: rung is a mapping of budget keys, e.g. rung: {{epochs: 16}}")
    earlier = entry.get("earlier_tuning") or []
    if not isinstance(earlier, list) or not all(isinstance(item, str) for item in earlier):
        raise ConfigError(
            f"{path}: part {workload}: earlier_tuning lists tuning record files (from the repository root)"
        )
    return Part(
        workload,
        study,
        tuple(f"{key}={value}" for key, value in sorted(rung.items())),
        tuple(REPO / item for item in earlier),
    )


def parse_claim(path: Path, entry: dict, known: list[str]) -> Claim:
    refuse_unknown(path, entry, CLAIM_KEYS, "claims.")
    claim_id, hypotheses = entry.get("id"), entry.get("hypotheses")
    if not isinstance(claim_id, str) or not isinstance(hypotheses, dict) or not hypotheses:
        raise ConfigError(f"{path}: each claim has an id and hypotheses: {{workload: hypothesis id, ...}}")
    outside = [name for name in hypotheses if name not in known]
    if outside:
        raise ConfigError(
            f"{path}: claim {claim_id} names workload {outside[0]}, which no part has: "
            f"{did_you_mean(outside[0], known)}use {', '.join(known)}"
        )
    return Claim(
        claim_id, str(entry.get("title") or claim_id), {str(key): str(value) for key, value in hypotheses.items()}
    )


def part_study(part: Part, experiments_dir: Path = EXPERIMENTS_DIR) -> Study:
    """The part's study as it runs at the part's rung: one of its ladder's rungs (its tuned_by kept), no rungs left;
    the study itself when the part names no rung. A rung on a study without a ladder, or a ladder without a rung
    named: ConfigError."""
    study = find_study(part.study, experiments_dir)
    if not part.rung:
        if study.rungs:
            labels = ", ".join(rung.label for rung in study.rungs)
            raise ConfigError(f"part {part.workload}: study {study.id} is a fidelity ladder: name its rung ({labels})")
        return study
    if not study.rungs:
        raise ConfigError(f"part {part.workload}: study {study.id} has no fidelity ladder: leave out rung")
    at_rung = only_rung(study, list(part.rung))
    if at_rung.rungs[0] not in study.rungs:
        labels = ", ".join(rung.label for rung in study.rungs)
        raise ConfigError(
            f"part {part.workload}: {part.rung_text} is no rung of study {study.id}: choose one of {labels}"
        )
    return study_at_rung(at_rung, at_rung.rungs[0])
