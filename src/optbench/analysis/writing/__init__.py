"""The writing room: the tables, figures and report a reader sees, and the folder they are written into.

Imports judging and statistics; nothing below imports it, so a change of wording or of a figure cannot touch a
statistic or a verdict.

    tables.py      per setting x optimizer tables: CSV numbers, Markdown and LaTeX text
    figures/       matplotlib figures (Agg), one module per kind, one colour per optimizer
    report.py      report.md embedding all of the above: assembles the sections in order; header, figures,
                   fidelity, definitions
    report_parts.py  what report.md is made from (ReportParts, TuningParts, FidelityParts)
    report_hypotheses.py  its verdict sections: hypotheses, their comparisons, seed plans, sequential looks
    report_results.py  its sections on the numbers: results, robust aggregates, variance, pairwise tests,
                   runs not completed
    report_tuning.py  its Tuning section
    fidelity_tables.py  a fidelity ladder's tables as report.md shows them (means, agreement, orders, flips)
    names.py       short, stable file names for each setting, the index mapping them back, what every run shares
    output.py      atomic writes into the output folder, removal of its own stale files
    aggregate_files.py  every table and figure the aggregator writes (the pipeline's write step), one writer each
    run_pair.py    two runs side by side (`python src/compare.py`): config differences, numbers, curves
    cross_workload_report.py  the cross-workload report: its tables, the profile figure, report.md
    validation_tables.py  a validation study's figures: tables/validation.csv, its Markdown, the README block
    tuning_budget_page.py  the tuning-budget tables as text and docs/cross-workload-study/tuning-budget.md
"""
