"""An optimizer of one's own, from a config folder outside the package (OPTBENCH_CONFIG_PATH), is an optimizer like
the package's: it composes, trains, records its registry facts outside its run identity, joins the search space
and passes the registry's tests through scripts/check_optimizer.py; its bad facts are one line. The files come
from the docs themselves: docs/your-own-optimizer.md's YAML block is the optimizer file, and docs/adding-an-
optimizer.md's registry snippet, pasted where the page says, builds the same entry."""

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, TINY

from optbench.config.config_path import CONFIG_PATH_VARIABLE, group_options
from optbench.config.own_optimizers import optimizer_names, own_specs, spec_for
from optbench.errors import ConfigError
from optbench.registry import optimizers
from optbench.studies.search_space import load_space

OWN_PAGE = REPO / "docs" / "your-own-optimizer.md"
PACKAGE_PAGE = REPO / "docs" / "adding-an-optimizer.md"


def fenced_blocks(page: Path, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", page.read_text(), flags=re.MULTILINE | re.DOTALL)


def write_own_folder(folder: Path, text: str | None = None, name: str = "radam") -> Path:
    """`folder/optimizer/<name>.yaml`, by default the page's RAdam file as it stands."""
    path = folder / "optimizer" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else fenced_blocks(OWN_PAGE, "yaml")[0])
    return path


@pytest.fixture
def own_folder(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "my_conf"
    write_own_folder(folder)
    monkeypatch.setenv(CONFIG_PATH_VARIABLE, str(folder))
    return folder


def test_the_docs_registry_snippet_is_an_entry_the_registry_takes():
    """The page's block is the registry's own opening and closing around the new entry; that entry, pasted last into
    REGISTRY, gives the entry the own file's `registry:` block gives: the two routes describe the same optimizer."""
    (block,) = fenced_blocks(PACKAGE_PAGE, "python")
    source = (REPO / "src" / "optbench" / "registry" / "optimizers.py").read_text()
    opening, _, rest = block.partition("        # ... the entries already there, then the new one, last:\n")
    entry, closing = rest[: rest.index("    )\n}")], rest[rest.index("    )\n}") :]
    assert opening in source and closing.strip() in source  # the context it shows is the registry's
    end = source.index("\n    )\n}\n") + 1  # the tuple of entries closes here
    namespace: dict = {"__name__": "optimizers_with_the_snippet"}
    exec(compile(source[:end] + entry + source[end:], "optimizers.py", "exec"), namespace)
    pasted = namespace["REGISTRY"]["radam"]
    assert type(pasted).__name__ == "OptimizerSpec"
    own = optimizers.spec_from_facts("radam", _yaml(fenced_blocks(OWN_PAGE, "yaml")[0])["registry"])
    assert dataclasses.asdict(pasted) == dataclasses.asdict(own)


def _yaml(text: str) -> dict:
    import yaml

    return yaml.safe_load(text)


def test_an_own_optimizer_is_one_more_name_with_its_own_entry_and_search_ranges(own_folder):
    assert optimizer_names() == (*optimizers.NAMES, "radam")
    spec = spec_for("radam")
    assert spec is not None and spec.library == "torch" and spec.default_schedule == "cosine" and not spec.lr_free
    assert "radam" in group_options(REPO / "conf", "optimizer")
    space = load_space(REPO / "experiments" / "search_spaces" / "cifar_resnet18.yaml")  # `defaults: registry`
    assert {axis.key: axis.as_dict() for axis in space["radam"]} == spec.search
    assert optimizers.spec_of("radam") is None  # the package's registry is untouched


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda text: text.replace("  library: torch", "  libary: torch"), "registry: unknown field libary"),
        (lambda text: re.sub(r"  library: torch.*\n", "", text), "registry: needs library"),
        (lambda text: re.sub(r"    lr: \{.*\}", "    lr: [1, 2]", text), r"registry.search: .* is not config key"),
        (lambda text: text.replace("name: radam", "name: radam2"), "must be the file's name, radam"),
        (lambda text: re.sub(r"registry:(.|\n)*", "", text), "carries its registry facts under `registry:`"),
    ],
    ids=["misspelt field", "missing field", "search not a mapping", "name", "no registry block"],
)
def test_bad_facts_are_one_line_naming_the_fix(own_folder, change, message):
    path = own_folder / "optimizer" / "radam.yaml"
    path.write_text(change(path.read_text()))
    with pytest.raises(ConfigError, match=message) as refused:
        own_specs()
    assert "\n" not in str(refused.value)


def test_a_package_name_and_a_missing_folder_are_refused(tmp_path, monkeypatch):
    write_own_folder(tmp_path / "mine", (REPO / "conf" / "optimizer" / "adam.yaml").read_text(), name="adam")
    monkeypatch.setenv(CONFIG_PATH_VARIABLE, str(tmp_path / "mine"))
    with pytest.raises(ConfigError, match="the package already has an optimizer named adam"):
        own_specs()
    monkeypatch.setenv(CONFIG_PATH_VARIABLE, str(tmp_path / "absent"))
    with pytest.raises(ConfigError, match=f"{CONFIG_PATH_VARIABLE} names .*absent, which is not a folder"):
        optimizer_names()


def test_an_own_optimizer_s_library_has_its_version_recorded_beside_the_package_s():
    """summary.json's versions (training/progress.py's first summary) name the run's optimizer's library even when
    no package optimizer comes from it, as docs/your-own-optimizer.md says."""
    from importlib import metadata

    from omegaconf import OmegaConf

    from optbench.training import progress, provenance

    own = _yaml(fenced_blocks(OWN_PAGE, "yaml")[0])
    own["registry"]["library"] = "scipy"  # installed, and the library of no package optimizer
    cfg = OmegaConf.create({"optimizer": own})
    assert "scipy" not in provenance.library_versions()
    versions = provenance.library_versions(progress.optimizer_library(cfg))
    assert versions["scipy"] == metadata.version("scipy") and versions["torch"] == metadata.version("torch")
    package = OmegaConf.create({"optimizer": {"name": "lion"}})
    assert progress.optimizer_library(package) == "lion-pytorch"


def run_train(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "src/train.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_an_own_optimizer_trains_from_its_folder_with_no_file_of_the_package_changed(own_folder, tmp_path):
    """The page's commands: train.py with the folder on OPTBENCH_CONFIG_PATH; its facts are recorded, not part of
    the identity. Without the variable the same command is one line that says where an own optimizer comes from."""
    env = {**os.environ, CONFIG_PATH_VARIABLE: str(own_folder), "OPTBENCH_DATA_DIR": str(tmp_path / "data")}
    args = ["optimizer=radam", *TINY, f"paths.results_dir={tmp_path / 'results'}"]
    done = run_train(args, env)
    assert done.returncode == 0, done.stderr
    (record_path,) = (tmp_path / "results").rglob("record.json")
    record = json.loads(record_path.read_text())
    assert record["config"]["optimizer"]["registry"]["library"] == "torch"
    assert not any(key.startswith("optimizer.registry") for key in record["identity"]["config"])
    assert json.loads((record_path.parent / "summary.json").read_text())["status"] == "completed"
    refused = run_train(
        [*args, f"paths.results_dir={tmp_path / 'other'}"], {k: v for k, v in env.items() if k != CONFIG_PATH_VARIABLE}
    )
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "unknown optimizer 'radam'" in refused.stderr and CONFIG_PATH_VARIABLE in refused.stderr
    assert not (tmp_path / "other").exists()
    # bad facts: one line before anything is made
    path = own_folder / "optimizer" / "radam.yaml"
    path.write_text(path.read_text().replace("  library: torch", "  library: 3"))
    bad = run_train([*args, f"paths.results_dir={tmp_path / 'bad'}"], env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "registry.library: 3 is not" in bad.stderr
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow
@pytest.mark.extended
def test_the_registry_checks_run_on_an_own_optimizer_with_one_command(tmp_path):
    """scripts/check_optimizer.py PATH: the tests parametrised over every optimizer, on this one, and they pass."""
    path = write_own_folder(tmp_path / "my_conf")
    env = {key: value for key, value in os.environ.items() if key != CONFIG_PATH_VARIABLE}
    done = subprocess.run(
        [sys.executable, "scripts/check_optimizer.py", str(path), "-p", "no:cacheprovider"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed.group(1)) >= 7, done.stdout[-2000:]  # 5 in test_optimizers, train, resume
    assert "radam" in done.stdout and "failed" not in done.stdout
