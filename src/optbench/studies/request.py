"""What `python src/study.py` was asked to do, as one typed value: `StudyRequest`.

study_command.py parses the command line and builds it once (`from_arguments`); everything below the command
line (status.show, until_decided.run_until_decided, the run and tuning steps) reads this instead of argparse's
Namespace, so a reader sees every field and its type in one place and a test can build a request without
parsing. Frozen: nothing below the command line changes what was asked.
"""

import argparse
from dataclasses import dataclass, field, fields
from pathlib import Path


@dataclass(frozen=True)
class StudyRequest:
    study: str | None  # a study id, file stem or .yaml path; None with --list or --select-tuned
    experiments: Path  # the folder of study files (tests: a copy)
    conf_dir: Path  # the Hydra config folder (tests: a copy of conf/)
    dry_run: bool = False  # list the runs and estimate the time; run nothing
    status: bool = False  # one table of the runs as they stand; run nothing
    launcher: str = "basic"  # conf/hydra/launcher/ (basic: serial)
    set: list[str] = field(default_factory=list)  # extra Hydra overrides for every run
    rung: list[str] | None = None  # run the study at this rung only
    tuned: bool = False  # use conf/optimizer/tuned/<name>.yaml for each optimizer
    select_tuned: str | None = None  # a tuning study whose best values to pick
    no_estimate: bool = False  # no time estimate: a dry run prints none, a launch records none
    list_studies: bool = False  # --list: list the studies
    plan_seeds: bool = False  # from the pilot's runs, the seeds each hypothesis needs
    pilot: Path | None = None  # the pilot runs' results folder (--plan-seeds)
    delta: float | None = None  # the effect to detect, in points for accuracies (--plan-seeds)
    until_decided: bool = False  # add seeds at pre-set looks until the hypotheses are decided
    max_seeds: int = 16  # the last look (--until-decided)
    hypotheses: list[str] | None = None  # the hypotheses --until-decided decides (None: the study's, or all)

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> "StudyRequest":
        """The parsed command line as a request; a flag the parser gains must be added here too (a test holds)."""
        renamed = {"list_studies": "list"}  # a field named `list` would hide the type in this class
        return cls(**{item.name: getattr(args, renamed.get(item.name, item.name)) for item in fields(cls)})
