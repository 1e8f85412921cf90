"""The report's figures, drawn with matplotlib's Agg backend (no display needed), one module per kind.

Each figure function takes the labelled run table (and the per-epoch curves where needed) and returns a
matplotlib Figure, or None when the data for it is absent (no noisy runs, no LR sweep). Conventions
kept across every figure so they read at a glance:
- one fixed colour per optimizer (sgd, adam, adamw, lion, muon; others take the next palette colours),
  line style and marker tell variants of one optimizer apart (an LR sweep);
- accuracies in %, epochs on x, units in every axis label, the legend outside the data area;
- means use completed runs only; runs that did not complete are drawn apart (dotted, or counted in
  the panel) and are said to be excluded.

    style.py        what every figure shares: colour per optimizer, line style per variant, panel grid, title
                    and legend, percent axes, clipped error bars
    curves.py       learning curves and memorization of noisy labels over epochs, per setting
    accuracy.py     the headline accuracy per optimizer (seeds and 95 % CI), against noise rate, learning rate
                    and wall time
    profiles.py     performance profiles: epochs and seconds to the target relative to the best optimizer
    tuning.py       one tuning study's search (tuning_report.py's records, not runs)
    transitions.py  human label noise: the recorded transition matrix as a heat map
    ladders.py      one fidelity ladder (fidelity.py): rank and metric against the budget
    tuning_budget.py  the expected best after k tuning trials per optimizer, one panel per workload
    cross_profile.py  a cross-workload study's time-to-target profile in steps, with each optimizer's score
"""

import matplotlib

matplotlib.use("Agg")  # here, before any figure module imports pyplot: files only, works on headless machines
