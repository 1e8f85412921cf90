"""report.md's Tuning section: how the hyperparameters were tuned, what it cost (device-hours), the winners, the
search figure and the winners at an edge of the search space, one block per tuning study."""

from optbench.analysis.judging.tuning_report import TuningStudy, protocol_sentence, tuning_display
from optbench.analysis.writing.report_parts import ReportParts, TuningParts
from optbench.analysis.writing.tables import to_markdown


def tuning_section(parts: ReportParts) -> str:
    """How the hyperparameters were tuned, what it cost, and whether the search was wide enough."""
    tuning = parts.tuning
    if tuning is None or not tuning.studies:
        return ""
    listed = len(frozenset().union(*(study.run_dirs for study in tuning.studies)))
    devices = (
        ", ".join(
            sorted({device.strip() for text in tuning.table["devices"] for device in text.split(",") if device.strip()})
        )
        or "devices not recorded"
    )
    lines = [
        "## Tuning",
        "",
        f"{len(tuning.set_aside)} run directories found here are tuning trials (the tuning files list {listed}): "
        "they are set aside and enter no table, test, verdict or figure above, because their validation scores "
        "chose the hyperparameters.",
        "",
        f"**Total tuning cost: {tuning.table['device_hours'].sum():.3g} device-hours** over "
        f"{int(tuning.table['runs'].sum())} runs ({devices}). Device-hours are the listed runs' wall times "
        f"summed; scores are validation accuracy, in %, mean ± sd over the winner's seeds.",
        "",
        "Files: [`tables/tuning.csv`](tables/tuning.csv), [`tables/tuning.md`](tables/tuning.md)",
        "",
    ]
    for study in tuning.studies:
        lines += tuning_study_block(study, tuning)
    return "\n".join(lines)


def tuning_study_block(study: TuningStudy, tuning: TuningParts) -> list[str]:
    rows = tuning.table[tuning.table["file"] == study.source]
    date = f", {study.record.date}" if study.record.date else ""
    lines = [
        f"### Tuning study {study.name}",
        "",
        f"From `{study.source}`{date}. {protocol_sentence(study)}",
        "",
        to_markdown(tuning_display(rows).drop(columns="study")),
        f"Device-hours for this study: {rows['device_hours'].sum():.3g}.",
        "",
    ]
    figure = tuning.figures.get(study.source)
    if figure:
        lines += [f"![Tuning search: {study.name}]({figure})", f"([PDF]({figure[:-4]}.pdf))", ""]
    edges = [f"- {name}: {text}" for name, texts in study.edges.items() for text in texts]
    if edges:
        lines += [
            "**Winners at the edge of the search space** (a better value may lie beyond it: widen the range "
            "and tune again):",
            "",
            *edges,
            "",
        ]
    else:
        lines += ["No winner sits at an edge of its search space.", ""]
    return lines
