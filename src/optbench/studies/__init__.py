"""The studies wing: studies of many runs, as data, planned without torch and launched through Hydra.

    plan.py       a study -> plain Hydra sweeps -> single runs, their directories and their state
    cli.py        `python src/study.py`: list, dry-run with an estimate, launch, select tuned values
    tuning.py     the per-optimizer tuning grid, selection on validation, conf/optimizer/tuned/
    launchers.py  which Hydra launcher runs the jobs; what sbatch's refusal means
    estimate.py   how long the remaining runs take, from a short measured run
    status.py     `--status`: each run's state read from its directory, the study's progress and time left
    outcome.py    after a sweep: which of its runs did not finish
"""
