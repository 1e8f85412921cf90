"""The statistics room: functions over arrays and numbers, the estimators and tests every judgment rests on.

Nothing here reads a file, writes one or imports another analysis room; a statistician can read and test it
without the report (arrows point down: writing -> judging -> statistics).

    stats.py       means, t intervals, exact permutation tests (paired sign-flip, two-sample, on ranks when
                   censored), the smallest attainable p, effect sizes, power, Holm, the noise-drop test
    robust.py      IQM and probability of improvement with stratified bootstrap intervals; performance profiles
    variance.py    per-image predictions -> each pair's difference, seeds-then-images bootstrap interval, and
                   the shares of its variance from seeds and from the finite test set
    sequential_rule.py  the looks, boundaries and decisions of a study run until decided
    fidelity_stats.py   a ladder's statistics: simultaneous change intervals, established orders (Holm), tau-b's
                   projection interval, the faithful rule, the seeds planner
"""
