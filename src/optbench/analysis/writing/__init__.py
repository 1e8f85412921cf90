"""The writing room: the tables, figures and report a reader sees, and the folder they are written into.

Imports judging and statistics; nothing below imports it, so a change of wording or of a figure cannot touch a
statistic or a verdict.

    tables.py      per setting x optimizer tables: CSV numbers, Markdown and LaTeX text
    figures.py     matplotlib figures (Agg), one colour per optimizer
    report.py      report.md embedding all of the above
    fidelity_tables.py  a fidelity ladder's tables as report.md shows them (means, agreement, orders, flips)
    names.py       short, stable file names for each setting, the index mapping them back, what every run shares
    output.py      atomic writes into the output folder, removal of its own stale files
    run_pair.py    two runs side by side (`python src/compare.py`): config differences, numbers, curves
"""
