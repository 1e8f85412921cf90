"""A validation study's figures as tables: tables/validation.csv (numbers, for code) and the Markdown people read.

`figure_table(figures)` is one row per judging.validation_figures.Figure with the columns
formats.aggregate_tables.VALIDATION promises (fractions, the Monte Carlo interval, the claim and whether they
disagree); `figure_display(table)` is the same as text, in percent, the measured figure beside the claimed one;
`validation_block(...)` is the generated part of docs/validation-study/README.md: what was resampled, then the table.
"""

import pandas as pd

from optbench.analysis.judging.validation_figures import WITHIN, Figure
from optbench.analysis.writing.tables import to_markdown
from optbench.formats import aggregate_tables
from optbench.formats.aggregate_tables import VALIDATION


def figure_table(figures: list[Figure]) -> pd.DataFrame:
    rows = [
        {
            "study": figure.study,
            "figure": figure.figure,
            "rule": figure.rule,
            "n": figure.n,
            "measured": figure.rate.value,
            "mc_low": figure.rate.low,
            "mc_high": figure.rate.high,
            "hits": figure.rate.hits,
            "trials": figure.rate.trials,
            "claimed": figure.claimed,
            "relation": figure.relation,
            "disagrees": figure.disagrees,
            "source": figure.source,
            "note": figure.note,
            "claimed_low": figure.claimed_low,
            "claimed_high": figure.claimed_high,
        }
        for figure in figures
    ]
    return pd.DataFrame(rows, columns=list(aggregate_tables.COLUMNS[VALIDATION]))


def percent(value: float, digits: int = 1) -> str:
    return "—" if pd.isna(value) else f"{100 * value:.{digits}f} %"


def claim_text(row) -> str:
    """`<= 5.00 %`, or for a range `in [93.1 %, 97.0 %] (mean 95.2 %)`."""
    if row.relation == WITHIN:
        return f"in [{percent(row.claimed_low)}, {percent(row.claimed_high)}] (mean {percent(row.claimed)})"
    return f"{row.relation} {percent(row.claimed, 2)}"


def sources(table: pd.DataFrame) -> list[str]:
    """Each claim's source once, in order of appearance: the display cites them as [1], [2], ..."""
    return list(dict.fromkeys(table["source"]))


def figure_display(table: pd.DataFrame) -> pd.DataFrame:
    """The table as people read it: measured [Monte Carlo 95 %] beside the claim with its source cited, and a loud
    DISAGREES."""
    cited = {source: index + 1 for index, source in enumerate(sources(table))}
    measured = [
        "no resamples" if not row.trials else f"{percent(row.measured)} [{percent(row.mc_low)}, {percent(row.mc_high)}]"
        for row in table.itertuples()
    ]
    return pd.DataFrame(
        {
            "study": table["study"],
            "figure": table["figure"],
            "rule": table["rule"],
            "n": table["n"].astype(str),
            "measured [MC 95 %]": measured,
            "resamples": table["trials"].astype(str),
            "claimed [source]": [f"{claim_text(row)} [{cited[row.source]}]" for row in table.itertuples()],
            "agrees": ["**DISAGREES**" if disagrees else "yes" for disagrees in table["disagrees"]],
            "note": table["note"],
        }
    )


def validation_block(facts: list[str], table: pd.DataFrame) -> str:
    """The generated block: the facts of the resampling (one bullet each), then the figures."""
    if not len(table):
        return "\n".join(f"- {fact}" for fact in facts) + "\n\n_(no figures: too few runs)_\n"
    legend = "\n".join(f"[{index}] {source}  " for index, source in enumerate(sources(table), start=1))
    return "\n".join(f"- {fact}" for fact in facts) + "\n\n" + to_markdown(figure_display(table)) + "\n" + legend + "\n"
