"""Hypothesis files as data: experiments/hypotheses/*.yaml parsed into frozen Hypothesis and HypothesisTest.

Each file is parsed once, by `load_hypotheses(folder)` / `parse_hypothesis(path)`, with every default
applied in `parse_test`; the aggregator (analysis/judging/hypotheses.py) evaluates them, and a hypothesis
study (specs/study_spec.py) carries its `HypothesisTest`. The schema is experiments/README.md, section
Hypotheses. Standard library and PyYAML only.
"""

import dataclasses
import difflib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from optbench.errors import ConfigError
from optbench.formats.metrics_log import VAL_ACC

HUMAN = "human"  # the noise kind whose settings are label sets (noise.label_set), not rates
HYPOTHESIS_KEYS = ("id", "title", "statement", "test", "study")  # a hypothesis file's keys

# ---- hypothesis tests: the schema is experiments/README.md, section Hypotheses
TEST_KINDS = ("metric_comparison", "epochs_to_fraction_of_reference", "noise_drop")
# The runs-table columns a test may compare, each with the direction in which it is better (True: higher): a
# hypothesis's `better:` defaults to it, and one that contradicts it is refused (a "lower accuracy is better"
# claim is a typo, never a hypothesis). The language model's (char_lm) are losses and bits per character.
METRIC_HIGHER_IS_BETTER = {
    "test_acc_at_best_val": True,
    "final_test_acc": True,
    "best_test_acc": True,
    "final_val_acc": True,
    "val_acc_best": True,
    "final_train_loss": False,
    "final_train_acc": True,
    "epochs_to_target": False,
    "wall_time_s": False,
    "train_images_per_s": True,
    "val_loss_best": False,
    "final_val_loss": False,
    "val_bpc_best": False,
    "test_loss_at_best_val": False,
}
METRICS = tuple(METRIC_HIGHER_IS_BETTER)
LANGUAGE_MODEL_METRICS = ("val_bpc_best", "test_loss_at_best_val")  # columns only a language model's runs have
DEFAULT_METRIC = "test_acc_at_best_val"  # test accuracy at the best-validation epoch: the headline
DEFAULT_ALPHA = 0.05  # two-sided, for each Holm-adjusted comparison
DEFAULT_MIN_SEEDS = 3  # seeds in a test (its pairs, or an arm's runs with a value); 2 give 4 sign flips: p >= 0.5


@dataclass(frozen=True)
class HypothesisTest:
    """A hypothesis's `test:` block with its defaults applied: what the aggregator computes."""

    kind: str  # one of TEST_KINDS
    subject: str  # the optimizer the claim is about
    versus: tuple[str, ...]  # each is a required comparison
    metric: str = DEFAULT_METRIC
    better: str = "higher"  # metric_comparison: the subject's metric is higher or lower (default: its better side)
    where: dict = field(default_factory=dict)  # column or config key -> a value or a list of values
    alpha: float = DEFAULT_ALPHA
    min_seeds: int = DEFAULT_MIN_SEEDS
    fraction: float = 0.0  # epochs_to_fraction_of_reference: target = fraction x reference
    reference_metric: str = "final_val_acc"
    curve_metric: str = VAL_ACC  # the metrics.jsonl key compared with the target
    noise: str = ""  # noise_drop: the noise kind
    rates: tuple[float, ...] = ()  # noise_drop: each rate is a required comparison
    label_sets: tuple[str, ...] = ()  # noise_drop with noise: human: each label set is a required comparison


@dataclass(frozen=True)
class Hypothesis:
    id: str
    title: str
    statement: str
    test: HypothesisTest
    source: str  # the YAML file it was read from


# ---------------------------------------------------------------- hypotheses


def hypothesis_files(experiments_dir: Path) -> list[Path]:
    """experiments/hypotheses/*.yaml, or the folder's own *.yaml when it is the hypotheses folder itself."""
    folder = experiments_dir / "hypotheses"
    folder = folder if folder.is_dir() else experiments_dir
    return sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])


def load_hypotheses(experiments_dir: Path) -> list[Hypothesis]:
    hypotheses = [parse_hypothesis(path) for path in hypothesis_files(experiments_dir)]
    ids = [hypothesis.id for hypothesis in hypotheses]
    duplicated = sorted({name for name in ids if ids.count(name) > 1})
    if duplicated:
        raise ConfigError(
            f"hypothesis id {duplicated[0]} is defined twice under {experiments_dir}: give each file its own id"
        )
    return hypotheses


def parse_hypothesis(path: Path) -> Hypothesis:
    """One hypothesis file; top-level keys other than id, title, statement and test (a `study:` grid,
    notes) are the study runner's business or comments, and are not read here."""

    def bad(problem: str) -> ConfigError:
        return ConfigError(f"{path}: {problem} (see experiments/README.md, section Hypotheses)")

    try:
        data = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as error:
        raise bad(f"not valid YAML ({str(error).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise bad("expected a mapping with id, statement and test")
    for key in ("id", "statement", "test"):
        if key not in data:
            raise bad(f"missing '{key}'")
    return Hypothesis(
        id=str(data["id"]),
        title=str(data.get("title", "")),
        statement=str(data["statement"]).strip(),
        test=parse_test(data["test"], bad),
        source=str(path),
    )


def parse_test(block, bad) -> HypothesisTest:
    """The `test:` block, checked, with every default applied (the one place defaults live)."""
    if not isinstance(block, dict) or block.get("kind") not in TEST_KINDS:
        raise bad(f"test.kind must be one of {', '.join(TEST_KINDS)}")
    settings = [item.name for item in dataclasses.fields(HypothesisTest)]
    for key in block:
        if key not in settings:  # a misspelt `metrc:` would silently test the default metric
            close = difflib.get_close_matches(str(key), settings, n=1)
            raise bad(
                f"test.{key} is not a test setting"
                + (f": did you mean test.{close[0]}?" if close else "")
                + f" (the settings: {', '.join(settings)})"
            )
    versus = [block["versus"]] if isinstance(block.get("versus"), str) else block.get("versus")
    if not isinstance(block.get("subject"), str):
        raise bad("test.subject must name one optimizer")
    if not isinstance(versus, list) or not versus or not all(isinstance(name, str) for name in versus):
        raise bad("test.versus must name an optimizer or a list of them")
    metric = block.get("metric", DEFAULT_METRIC)
    test = HypothesisTest(
        kind=block["kind"],
        subject=block["subject"],
        versus=tuple(versus),
        better=block.get("better", better_side(metric)),
        **{
            key: block[key]
            for key in ("metric", "where", "alpha", "min_seeds", "reference_metric", "curve_metric")
            if key in block
        },
        fraction=block.get("fraction", 0.0),
        noise=block.get("noise", ""),
        rates=tuple(block.get("rates") or ()),
        label_sets=tuple(block.get("label_sets") or ()),
    )
    _check_common(test, bad)
    _check_kind(test, block, bad)
    return test


def better_side(metric) -> str:
    """'higher' or 'lower': the side on which `metric` is better (an unknown metric: 'higher', refused later)."""
    return "lower" if METRIC_HIGHER_IS_BETTER.get(metric, True) is False else "higher"


def _check_common(test: HypothesisTest, bad) -> None:
    if test.metric not in METRICS:
        raise bad(f"test.metric must be one of {', '.join(METRICS)}")
    if test.better not in ("higher", "lower"):
        raise bad("test.better must be 'higher' or 'lower'")
    if test.kind == "metric_comparison" and test.better != better_side(test.metric):
        raise bad(
            f"test.better: {test.better} contradicts {test.metric}, whose {better_side(test.metric)} values are "
            f"better: write better: {better_side(test.metric)} (or leave it out)"
        )
    if isinstance(test.alpha, bool) or not isinstance(test.alpha, (int, float)) or not 0 < test.alpha < 1:
        raise bad("test.alpha must be a number between 0 and 1")
    if isinstance(test.min_seeds, bool) or not isinstance(test.min_seeds, int) or test.min_seeds < 2:
        raise bad("test.min_seeds must be a whole number >= 2 (a test needs two seeds per arm)")
    if not isinstance(test.where, dict):
        raise bad("test.where must map a column to a value or a list of values")


def _check_kind(test: HypothesisTest, block: dict, bad) -> None:
    if test.kind == "noise_drop" and block.get("noise") == HUMAN:  # real label sets: the set fixes the rate
        if (
            not isinstance(block.get("label_sets"), list)
            or not test.label_sets
            or test.rates
            or not all(isinstance(name, str) for name in test.label_sets)
        ):
            raise bad(
                "noise_drop with test.noise: human needs test.label_sets (a list of label sets, e.g. "
                "[aggre, worst]) and no test.rates"
            )
    elif test.kind == "noise_drop":
        if (
            not isinstance(block.get("noise"), str)
            or not isinstance(block.get("rates"), list)
            or not test.rates
            or not all(isinstance(rate, (int, float)) and 0 < rate < 1 for rate in test.rates)
            or test.label_sets
        ):
            raise bad(
                "noise_drop needs test.noise (a noise kind) and test.rates (a list of rates in (0, 1)); "
                "test.label_sets only with test.noise: human"
            )
    if test.kind == "epochs_to_fraction_of_reference":
        if isinstance(test.fraction, bool) or not isinstance(test.fraction, (int, float)) or not 0 < test.fraction <= 1:
            raise bad("epochs_to_fraction_of_reference needs test.fraction in (0, 1]")
        if test.reference_metric not in METRICS:
            raise bad(f"test.reference_metric must be one of {', '.join(METRICS)}")
