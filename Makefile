# Two commands on a fresh machine:
#   make quick   set up .venv when missing, then a short training run (synthetic data, ~1 min on CPU)
#   make test    set up .venv when missing, then the test suite less the extended tier (CI runs both)
#   make test-extended  the slowest tests, marked extended (about a minute or more each on 2 busy cores)
#   make test-fast  the same less the tests marked slow (docs/testing.md: the three tiers and their times)
#   make test-slurm  the SLURM tests on a one-node cluster started and stopped around them (root)
# ARGS passes Hydra overrides through, e.g. make quick ARGS="dataset=cifar10 optimizer=lion".
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup quick test test-extended test-fast test-slurm lint clean-venv

setup: $(STAMP)

# Re-install only when the dependency list changes. torch/torchvision come unpinned from the
# registry so pip picks a matching pair (about 5 GB with the CUDA libraries, ~2 min).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

quick: $(STAMP)
	$(PY) src/train.py experiment=quick $(ARGS)

# -n auto: one pytest worker per core (pytest-xdist); most tests wait on subprocesses or run 1 thread.
test: $(STAMP)
	$(PY) -m pytest -q -n auto -m "not extended" $(ARGS)

# The slowest tests (marked extended, each 12 s or more: every documented command, SLURM jobs, tuning studies): CI runs
# them after make test, so `make test` stays within 10 minutes on 2 cores (docs/testing.md: the three tiers).
test-extended: $(STAMP)
	$(PY) -m pytest -q -n auto -m extended $(ARGS)

# The linter, formatter (check only) and type checker CI runs before the tests; `ruff format .` and
# `ruff check --fix .` apply what they ask. mypy reads src/ and scripts/ (pyproject.toml [tool.mypy]).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The fast tier while working: every test not marked slow (none over about 10 s).
test-fast: $(STAMP)
	$(PY) -m pytest -q -n auto -m "not slow" $(ARGS)

# Only the SLURM tests, on a one-node cluster started for them and stopped after, even when they fail (root).
test-slurm: $(STAMP)
	scripts/local-slurm.sh up && { SLURM_CONF=$${OPTBENCH_SLURM_DIR:-/tmp/optbench-slurm}/slurm.conf \
	  $(PY) -m pytest -q -m slurm tests/test_slurm.py $(ARGS); status=$$?; scripts/local-slurm.sh down; exit $$status; }

clean-venv:
	rm -rf $(VENV)
