"""Where a planned run stands before a study launches it: the one vocabulary for those states.

studies/plan.py gives each planned run one of these from its directory (no record or summary: NEW; a finished
summary: DONE; a summary that is not finished, or a file that cannot be read: UNFINISHED; a record naming
another run: OTHER_EXPERIMENT, never launched over); the study command counts, skips and reuses by them,
status.py shows them and the aggregator calls a run without summary.json UNFINISHED. Every module spells the
constant, never the word (tests/test_house.py holds it). Standard library only: wings on both sides read it.
"""

NEW = "new"  # nothing of the run on disk yet: the study will train it
DONE = "done"  # its summary says it finished (completed or diverged): skipped, its result reused
UNFINISHED = "unfinished"  # started but not finished (or unreadable): the study resumes it
OTHER_EXPERIMENT = "other experiment"  # the directory's record.json names another run: never launched over
PLANNED_STATES = (NEW, DONE, UNFINISHED, OTHER_EXPERIMENT)
REUSED = (DONE, UNFINISHED)  # a run already on disk: what it trained on matters to the study's note
