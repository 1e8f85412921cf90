"""Composing conf/ with Hydra without torch: resolvers, command lines, override lists, one-line errors.

- `register_resolvers()`: the `${optbench_*:}` resolvers conf/config.yaml uses; call before composing.
- `split_command_line(argv)`: src/train.py's arguments as Hydra reads them, so the up-front checks see
  the same overrides; flag-style arguments (`--optimizer adam`) are answered with the override form.
- `parse_overrides(overrides)`: key -> values (several when swept), hydra.* overrides apart; the one
  walker behind the train preflight and the study planner. `combinations(values)`: every single run;
  `multirun_jobs(overrides)`: every job of a multirun as Hydra's sweeper spells it (the planner's runs).
- `compose_checked(...)`: compose with unknown group options and Hydra's errors as one-line ConfigErrors, and
  with the optimizer's own defaults (`with_optimizer_defaults`: Schedule-Free gets scheduler=constant when no
  scheduler= is given); src/train.py's jobs get the same through `with_optimizer_defaults` itself.
"""

import functools
import itertools
import re
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from optbench.config import config_path
from optbench.data.fingerprint import data_dir_name, data_fingerprint, readable_folder_name
from optbench.device.gpu_per_job import gpu_for_job
from optbench.device.sharing import parallel_jobs
from optbench.errors import ConfigError, did_you_mean
from optbench.formats import run_record
from optbench.identity import left_out_of_directory_name
from optbench.registry import optimizers
from optbench.rundir import data_level, noise_level

# Hydra's own command-line flags (hydra/_internal/utils.py get_args_parser), so they pass the checks untouched.
_HYDRA_FLAGS_WITH_VALUE = (
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--package",
    "-p",
    "--experimental-rerun",
    "--cfg",
    "-c",
    "--shell-completion",
    "-sc",
)
_HYDRA_SWITCHES = (
    "--multirun",
    "-m",
    "--resolve",
    "--run",
    "-r",
    "--hydra-help",
    "--help",
    "-h",
    "--version",
    "--info",
    "-i",
)
HELP_FLAGS = ("--help", "-h", "--hydra-help", "--version", "--info", "-i", "--shell-completion", "-sc")


def run_variant(override_dirname: str) -> str:
    """`a=1,b=x/y` -> `a=1,b=x_y/`; empty stays empty, so plain runs get no extra directory level."""
    if not override_dirname:
        return ""
    return re.sub(r"[^A-Za-z0-9=,._+-]", "_", override_dirname) + "/"


def directory_excluded_keys(task_overrides) -> list[str]:
    """conf/config.yaml's `exclude_keys`: the keys of a job's overrides (`hydra.overrides.task`) that its directory's
    variant level leaves out (identity.left_out_of_directory_name). Parsed as Hydra parses them, so each is the
    `key_or_group` Hydra's override_dirname compares: `+paths.x=1` and `logger=[csv]` are left out like `paths.x=1`."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides([str(line) for line in task_overrides])
    return sorted({override.key_or_group for override in parsed if left_out_of_directory_name(override.key_or_group)})


@functools.lru_cache(maxsize=64)  # one fingerprint per folder per process: a study plans hundreds of runs on it
def dataset_dir_name(name: str, root=None, image_size=32, data_dir=None, results_dir=None) -> str:
    """The run directory's dataset level: the dataset's name; for a folder of images its folder name and
    the first digits of its content fingerprint, or the existing level under `results_dir` that holds runs
    of the same data (rundir.data_level: another copy's name, or the older path-hash name). A folder that
    cannot be listed is a ConfigError (preflight and the planner call this before Hydra makes anything)."""
    if not root:
        return name
    fingerprint = data_fingerprint(name, root=root, image_size=int(image_size), data_dir=data_dir)
    wanted = data_dir_name(name, root, fingerprint)
    return data_level(Path(str(results_dir)), wanted, fingerprint, run_record.recorded_data) if results_dir else wanted


def dataset_dir_resolver(name: str, root=None, image_size=32, data_dir=None, results_dir=None) -> str:
    """dataset_dir_name for conf/config.yaml; an unusable folder gets a placeholder name here, because
    the run refuses it (one line) before writing anything and removes the directory Hydra made."""
    try:
        return dataset_dir_name(name, root, image_size, data_dir, results_dir)
    except (ConfigError, OSError):
        return f"{name}-{readable_folder_name(root)}-unreadable"


def cfg_dataset_dir(cfg) -> str:
    """dataset_dir_name of a composed config (the same arguments conf/config.yaml passes)."""
    return dataset_dir_name(
        cfg.dataset.name,
        OmegaConf.select(cfg, "dataset.root"),
        OmegaConf.select(cfg, "dataset.image_size", default=32),
        cfg.paths.data_dir,
        cfg.paths.results_dir,
    )


def register_resolvers() -> None:
    OmegaConf.register_new_resolver("optbench_variant", run_variant, replace=True)
    OmegaConf.register_new_resolver("optbench_directory_excluded_keys", directory_excluded_keys, replace=True)
    OmegaConf.register_new_resolver("optbench_dataset_dir", dataset_dir_resolver, replace=True)
    OmegaConf.register_new_resolver("optbench_noise_dir", noise_level, replace=True)
    # device=${optbench_gpu_for_job:}: one GPU per parallel job (src/study.py --launcher parallel adds it)
    OmegaConf.register_new_resolver("optbench_gpu_for_job", gpu_for_job, replace=True)
    # hydra/launcher=parallel n_jobs: the runs at once that measured fastest on this kind of machine
    OmegaConf.register_new_resolver("optbench_parallel_jobs", parallel_jobs, replace=True)


def is_hydra_flag(argument: str) -> bool:
    """Whether a command-line word is one of Hydra's own flags (`--cfg`, `-m`, `--config-name=x`), not a setting."""
    return argument in _HYDRA_SWITCHES or argument.split("=", 1)[0] in _HYDRA_FLAGS_WITH_VALUE


def split_command_line(argv: list[str]) -> tuple[list[str], bool]:
    """(the overrides, whether Hydra only prints help). Flag-style settings are a one-line ConfigError."""
    overrides, strays, position = [], [], 0
    while position < len(argv):
        argument = argv[position]
        if argument in _HYDRA_FLAGS_WITH_VALUE:
            position += 2
            continue
        if is_hydra_flag(argument):
            position += 1
            continue
        if argument.startswith("-") and not argument.startswith("~"):
            strays.append(argument)
            if "=" not in argument and position + 1 < len(argv) and not argv[position + 1].startswith("-"):
                strays.append(argv[position + 1])
                position += 1
        else:
            overrides.append(argument)
        position += 1
    if strays:
        raise ConfigError(flag_style_answer(strays))
    return overrides, any(argument in HELP_FLAGS for argument in argv)


def flag_style_answer(strays: list[str]) -> str:
    """`--optimizer adam --epochs 10` -> the Hydra overrides and the run_single_experiment.py form."""
    pairs, position = [], 0
    while position < len(strays):
        key, _, value = strays[position].lstrip("-").partition("=")
        if not value and position + 1 < len(strays) and not strays[position + 1].startswith("-"):
            value, position = strays[position + 1], position + 1
        pairs.append((key, value))
        position += 1
    overrides = " ".join(f"{key.replace('-', '_')}={value}" for key, value in pairs)
    flags = " ".join(f"--{key} {value}".strip() for key, value in pairs)
    return (
        f"src/train.py takes Hydra overrides, not flags: python src/train.py {overrides} "
        f"(or python run_single_experiment.py {flags})"
    )


def check_text(overrides: list[str]) -> None:
    """An override holding bytes that are not UTF-8 (Python keeps them as lone surrogates) cannot be written
    into a record or a directory name: one line, shown with escapes, before anything starts."""
    for override in overrides:
        if any("\udc80" <= character <= "\udcff" for character in override):
            shown = override.encode(errors="surrogateescape").decode(errors="backslashreplace")
            raise ConfigError(f"{shown}: holds a byte that is not UTF-8 text; retype the value in UTF-8")


def parse_overrides(overrides: list[str]) -> tuple[dict[str, list[str | None]], list[str]]:
    """Run overrides as key -> values (a sweep like `seed=0,1` gives several; a deletion `~key` gives [None]),
    and the hydra.* / hydra/... overrides apart. Keys keep their +, ++ and ~ prefixes."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    check_text(overrides)
    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as error:  # Hydra's parse errors span lines; the first names the override  # noqa: BLE001
        raise ConfigError(f"bad override: {str(error).strip().splitlines()[0]}") from None
    values: dict[str, list[str | None]] = {}
    hydra_overrides: list[str] = []
    for override in parsed:
        line = override.input_line
        assert line is not None  # the parser keeps the text of each override it parsed
        if override.is_hydra_override():
            hydra_overrides.append(line)
            continue
        key = override.get_key_element()
        if override.is_sweep_override():
            try:
                values[key] = [str(value) for value in override.sweep_string_iterator()]
            except Exception:  # interval sweeps have no list of values  # noqa: BLE001
                raise ConfigError(
                    f"{line}: interval sweeps need an optimisation launcher; "
                    "list the values instead, e.g. optimizer.lr=0.01,0.1"
                ) from None
        else:
            values[key] = [line.split("=", 1)[1] if "=" in line else None]
    return values, hydra_overrides


def format_value(value) -> str:
    """A grid value as Hydra reads it back: 3 significant digits for floats (0.1 x 3 -> 0.3, not
    0.30000000000000004)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def multirun_jobs(command_overrides: list[str]) -> list[list[str]]:
    """Every job of `python src/train.py -m <command_overrides>` as Hydra's basic sweeper hands it out: its
    order and its spelling of each value (a float is re-spelled by Python: `1e+11` -> `100000000000.0`),
    which names the job's directory. Asks Hydra rather than copying its formatting; hydra.* overrides dropped,
    but `hydra.sweeper.trials` (the optbench_trials sweeper) runs each of its trials with every job."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(command_overrides))
    jobs = BasicSweeper.split_arguments([override for override in parsed if not override.is_hydra_override()], None)[0]
    trials = [override for override in parsed if override.get_key_element() == "hydra.sweeper.trials"]
    if not trials:  # the optbench_trials sweeper runs each trial with every job (src/hydra_plugins/)
        return jobs
    listed = trials[-1].value()
    if not isinstance(listed, list):  # a bare value would be taken letter by letter
        raise ConfigError(
            f"{trials[-1].input_line}: give a list of trials, each a space-separated override list, "
            'e.g. hydra.sweeper.trials=\'["optimizer.lr=0.01 optimizer.weight_decay=0.001","optimizer.lr=0.1"]\''
        )
    return [job + str(trial).split() for job in jobs for trial in listed]


def override_text(key: str, value: str | None) -> str:
    return key if value is None else f"{key}={value}"


def combinations(values: dict[str, list[str | None]]) -> list[list[str]]:
    """Every single run a (possibly sweeping) set of values stands for, as override lists."""
    keys = list(values)
    return [
        [override_text(key, value) for key, value in zip(keys, chosen)]
        for chosen in itertools.product(*values.values())
    ]


def check_groups(overrides: list[str], conf_dir: Path) -> None:
    """An unknown option of a config group (optimizer=adamm) as one line listing the options, over conf/ and the
    folders of OPTBENCH_CONFIG_PATH (config/config_path.py)."""
    for override in overrides:
        key, _, value = override.lstrip("+~").partition("=")
        chosen = value[1:-1].split(",") if value.startswith("[") and value.endswith("]") else [value]  # logger=[a,b]
        unknown = [
            name.strip()
            for name in chosen
            if name.strip() not in ("null", "") and config_path.option_file(conf_dir, key, name.strip()) is None
        ]
        if (Path(conf_dir) / key).is_dir() and unknown:
            options = config_path.group_options(conf_dir, key)
            hint = did_you_mean(unknown[0], options, lambda option: f"{key}={option}")  # noqa: B023
            own = OWN_OPTIMIZER_HINT if key == "optimizer" else ""
            raise ConfigError(f"unknown {key} '{unknown[0]}': {hint}choose {key}=" + ", ".join(options) + own)


# Where an optimizer that is not the package's comes from: the one word a user who wrote one needs.
OWN_OPTIMIZER_HINT = (
    f" (an optimizer of your own: put its folder in {config_path.CONFIG_PATH_VARIABLE}, docs/your-own-optimizer.md)"
)


def check_added_keys(overrides: list[str], conf_dir: Path) -> None:
    """`+key=value` (what Hydra advises after a typo: `+epoch=1`) adds a key no part of optbench reads: the
    run would train with the default, in a directory named after the typo. One line naming the closest
    setting instead. A config group (`+experiment=...`) is not a key. Call inside initialize_config_dir."""
    added = [override for override in overrides if override.startswith("+")]
    if not added:
        return
    from hydra import compose

    base = compose(config_name="config", overrides=[override for override in overrides if override not in added])
    for override in added:
        error = unknown_key_error(override, base, conf_dir)
        if error:
            raise error


def unknown_key_error(override: str, base, conf_dir: Path) -> ConfigError | None:
    """For an override of a key that `base` (the composed config) lacks and no config group names: one line with
    the closest known key (`optimzer=lion`: did you mean optimizer=lion?), else None."""
    key, _, value = override.lstrip("+~").partition("=")
    if (Path(conf_dir) / key).is_dir() or OmegaConf.select(base, key, default=_ABSENT) is not _ABSENT:
        return None
    parent, _, leaf = key.rpartition(".")
    siblings = OmegaConf.select(base, parent, default=None) if parent else base
    names = [str(name) for name in siblings] if isinstance(siblings, DictConfig) else []
    hint = did_you_mean(leaf, names, lambda name: f"{parent + '.' if parent else ''}{name}={value}")
    way_out = "drop the + and use a listed key" if override.startswith("+") else "use a listed key"
    return ConfigError(
        f"{override}: {key} is not a setting optbench reads ({hint}python src/train.py --cfg job lists them); {way_out}"
    )


_ABSENT = object()


def hydra_error_line(error: Exception) -> str:
    """Hydra's message on one line: its first two lines name the key and the fix."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return "; ".join(lines[:2])


def compose_checked(overrides: list[str], conf_dir: Path, with_hydra: bool = False):
    """compose() inside an initialize_config_dir context, with its failures as one-line ConfigErrors and the
    optimizer's own defaults applied (with_optimizer_defaults)."""
    from hydra import compose
    from hydra.errors import HydraException

    def composed(some_overrides: list[str], hydra_node: bool = False):
        return compose(config_name="config", overrides=list(some_overrides), return_hydra_config=hydra_node)

    try:
        check_groups(list(overrides), conf_dir)
        return with_optimizer_defaults(composed(overrides, with_hydra), overrides, composed)
    except HydraException as error:
        raise misspelt_key_error(overrides, conf_dir, composed) or ConfigError(hydra_error_line(error)) from None


def misspelt_key_error(overrides: list[str], conf_dir: Path, compose) -> ConfigError | None:
    """Hydra refuses a key the config lacks with "To append to your config use +optimzer=lion", and a second try
    with the + got our answer: the first try gets it now (the closest key, over the groups the command chose)."""
    choices_only = [
        override
        for override in overrides
        if "." not in override.split("=", 1)[0] and (Path(conf_dir) / override.lstrip("+~").split("=", 1)[0]).is_dir()
    ]
    try:
        base = compose(choices_only)
    except Exception:  # the group choices themselves fail: Hydra's own line says why  # noqa: BLE001
        return None
    return next(
        filter(
            None,
            (
                unknown_key_error(override, base, conf_dir)
                for override in overrides
                if not override.startswith(("hydra.", "hydra/", "~"))
            ),
        ),
        None,
    )


def optimizer_defaults(cfg, overrides: list[str]) -> dict[str, str]:
    """group -> option: the registry entry's own choices (OptimizerSpec.group_defaults) for the groups the
    command left unchosen and conf/config.yaml chose otherwise. An explicit choice is kept (and validated)."""
    spec = optimizers.spec_of_config(OmegaConf.select(cfg, "optimizer") or {})  # an own optimizer's facts too
    if spec is None:
        return {}
    chosen = {override.lstrip("+~").split("=", 1)[0] for override in overrides}
    return {
        group: option
        for group, option in spec.group_defaults().items()
        if group not in chosen and OmegaConf.select(cfg, f"{group}.name") != option
    }


def with_optimizer_defaults(cfg, overrides: list[str], compose):
    """`cfg` with its optimizer's own group options where the command chose none: each such group recomposed as
    `compose(overrides + [group=option])` gives it (so `scheduler.x=...` overrides still apply), and
    `optimizer_defaults: {group: option}` saying so (record.json, train.log). The rest of `cfg`, its hydra
    node included, stays: the run directory is the one the command names. One path for every entry point."""
    defaults = optimizer_defaults(cfg, overrides)
    if not defaults:
        return cfg
    recomposed = compose([*overrides, *(f"{group}={option}" for group, option in defaults.items())])
    with open_dict(cfg):
        for group in defaults:
            cfg[group] = recomposed[group]
        cfg.optimizer_defaults = dict(defaults)
    return cfg
