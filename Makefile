# Two commands on a fresh machine:
#   make quick   set up .venv when missing, then a short training run (synthetic data, ~1 min on CPU)
#   make test    set up .venv when missing, then the test suite
# ARGS passes Hydra overrides through, e.g. make quick ARGS="dataset=cifar10 optimizer=lion".
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup quick test clean-venv

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
	$(PY) -m pytest -q -n auto $(ARGS)

clean-venv:
	rm -rf $(VENV)
