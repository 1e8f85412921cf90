"""The studies wing: studies of many runs, as data, planned without torch and launched through Hydra.

plan.py             a study -> plain Hydra sweeps -> single runs, their directories and their state
study_command.py    `python src/study.py`: the command line, the tuned_by chain, launching, selecting tuned values
dry_run.py          what --dry-run prints: the plan, a tuning budget, and the time estimate
request.py          StudyRequest: what the command line asked, typed, as every step below it reads it
tuning_protocol.py  fair tuning: trials scored, winners picked on validation, conf/optimizer/tuned/, the record
search_space.py     search spaces as data (experiments/search_spaces/), quasi-random trials drawn from them
launchers.py        which Hydra launcher runs the jobs, train.py's child process; what sbatch's refusal means
estimate.py         how long the remaining runs take, from runs of their shape on disk or a short measured run
probe.py            a shape with no runs on disk: a probe sweep of 3 one-epoch runs prices its start-up and records
estimate_record.py  a launch's estimate kept (estimate-<study>.json), then set beside what its runs took
status.py           `--status`: each run's state read from its directory, the study's progress and time left
outcome.py          after a sweep: which of its runs did not finish
pilot.py            `--plan-seeds --pilot DIR`: the seeds each hypothesis needs, from pilot runs
until_decided.py    `--until-decided`: add seeds at pre-set looks until the hypotheses are decided
reuse_note.py       the one line naming reused or resumed runs trained on another processor kind or thread count
stopping.py         Ctrl-C, SIGINT or SIGTERM stops the whole study, each sweep its own process group, runs resumable
published.py        planned runs already published (docs/*/runs, a study's `published:`): named, priced, copied in
newcomers.py        a study's newcomers: tuned with its tuning study's protocol beside the published winners
"""
