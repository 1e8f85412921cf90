"""The house's promises: planning and checking load no torch, one list of the settings that do not change
a run's numbers serves directory names, resume and grouping, and the name registries agree."""

import subprocess
import sys

import pytest
import yaml

from conftest import CONF_DIR, REPO, compose_config
from optbench import choices, rundir

NAMING_KEYS = {"seed", "dataset", "optimizer", "noise", "noise.rate", "noise.label_set"}   # already levels of the run directory


def loaded_modules(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after `code` (run from the repository's src/)."""
    probe = f"import sys\n{code}\nprint(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO / "src", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize("code", [
    "from optbench.studies.cli import main\nmain(['--list'])",
    "from optbench.studies.cli import main\nmain(['full', '--dry-run', '--no-estimate'])",
    "from optbench.studies.cli import main\nmain(['full', '--status'])",
    "from pathlib import Path\nfrom optbench.hydra_glue import register_resolvers\nregister_resolvers()\n"
    "from optbench.training.cli import preflight\n"
    "assert preflight(['-m', 'optimizer=sgd,adam,adamw,lion,muon', 'seed=0,1,2', 'dataset=cifar10,cifar100'], "
    "Path('../conf')) == 30",
    "from optbench import optimizers, choices\nassert choices.OPTIMIZERS == optimizers.NAMES",
], ids=["study --list", "study full --dry-run --no-estimate", "study full --status", "preflight of a 30-run sweep",
      "the optimizer registry"])
def test_planning_and_checking_import_no_torch(code):
    assert not {name for name in loaded_modules(code) if name == "torch" or name.startswith("torch.")}


def numbers_free_keys_in(*overrides: str) -> set[str]:
    from omegaconf import OmegaConf

    flat = rundir.flatten(OmegaConf.to_container(compose_config(list(overrides)), resolve=True))
    return {key for key in flat if rundir.is_numbers_free(key)}


def test_the_directory_name_leaves_out_exactly_the_numbers_free_settings():
    hydra_node = yaml.safe_load((CONF_DIR / "config.yaml").read_text())["hydra"]
    excluded = set(hydra_node["job"]["config"]["override_dirname"]["exclude_keys"])
    assert all(rundir.is_numbers_free(key) for key in excluded - NAMING_KEYS)
    present = (numbers_free_keys_in() | numbers_free_keys_in("dataset=imagefolder", "dataset.root=x")
               | numbers_free_keys_in("logger=[tensorboard,mlflow,wandb,csv]")
               | numbers_free_keys_in("noise=human", "noise.label_file=x"))
    assert present <= excluded, present - excluded
    # and nothing that changes the numbers is left out of the name
    assert not {key for key in excluded - NAMING_KEYS if not rundir.is_numbers_free(key)}


def test_identity_ignores_exactly_the_numbers_free_settings():
    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(compose_config([]), resolve=True)
    moved = OmegaConf.to_container(compose_config(["paths.results_dir=elsewhere", "device=cpu",
                                                   "train.eval_batch_size=8", "train.progress_bar=false"]), resolve=True)
    changed = OmegaConf.to_container(compose_config(["optimizer.lr=0.3"]), resolve=True)
    assert rundir.identity(plain, "d") == rundir.identity(moved, "d")
    assert rundir.identity_differences(rundir.identity(plain, "d"), rundir.identity(changed, "d")) == [
        "optimizer.lr: 0.1 -> 0.3"]
    assert rundir.identity_differences(rundir.identity(plain, "d"), rundir.identity(plain, "e")) == ["the data differ"]


def test_the_registries_cover_the_names_config_accepts():
    from optbench.data.sources import SOURCES
    from optbench.device.policy import AMP_DTYPES
    from optbench.training.models import BLOCKS_PER_STAGE

    assert tuple(SOURCES) == choices.DATASETS
    assert tuple(BLOCKS_PER_STAGE) == choices.ARCHITECTURES
    assert tuple(AMP_DTYPES) == choices.AMP_CHOICES
    for group, names in (("dataset", choices.DATASETS), ("noise", choices.NOISE_KINDS),
                         ("scheduler", choices.SCHEDULES), ("model", choices.ARCHITECTURES)):
        assert {path.stem for path in (CONF_DIR / group).glob("*.yaml")} == set(names), group
    assert {path.stem for path in (CONF_DIR / "logger").glob("*.yaml")} == {*choices.LOGGERS, "none"}
    assert set(choices.LOGGER_PACKAGES) == set(choices.LOGGERS)
    launchers = {path.stem for path in (CONF_DIR / "hydra" / "launcher").glob("*.yaml")}
    assert launchers == set(choices.LAUNCHERS) - {"basic"}

