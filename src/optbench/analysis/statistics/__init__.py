"""The statistics room: functions over arrays and numbers, the estimators and tests every judgment rests on.

Nothing here reads a file, writes one, takes a run table or imports anything of optbench outside this room (no
format, status or metric key: tests/test_house.py checks); a statistician can read and test it without the report
(arrows point down: writing -> judging -> statistics). The tables over a study's runs built from these are in the
judging room.

    summaries.py   means with t intervals, spread up to floating-point noise; per-seed values, each seed once,
                   the seeds two arms pair on
    exact_tests.py exact permutation tests (paired sign-flip, two-sample, on ranks when censored), the smallest
                   attainable p, Holm's adjustment of a family
    power.py       the significance level, the power of a t-test, the smallest effect it detects
    two_arms.py    the test of two arms over seeds (`two_arm_test` -> Comparison): paired t on shared seeds or
                   Welch, the exact test beside it, effect size, power
    noise_drop.py  the H3 noise drop: per-seed drops tested, or the Welch-Satterthwaite contrast of four cells
    robust.py      IQM and probability of improvement with stratified bootstrap intervals; performance profiles
    variance.py    per-image correctness of two arms -> their difference, seeds-then-images bootstrap interval, and
                   the shares of its variance from seeds and from the finite test set
    sequential_rule.py  the looks, boundaries and decisions of a study run until decided
    fidelity_stats.py   a ladder's two answers: each pair's change bounded one-sided on its own spread and the
                   resolution certified; orders established (Holm) and kept by one-sided bounds; tau-b's
                   projection interval, the faithful rule
    fidelity_power.py   the power of those answers for an unchanged rung and the seeds each needs, by simulation
    rank_agreement.py  rankings in a metric's direction, Kendall's tau between two, its projection and bootstrap
                   intervals, and their coverage by simulation
    profile_score.py  AlgoPerf's performance ratios, profile and integrated score (area up to r_max over r_max - 1)
    resampling.py  disjoint draws of real runs without replacement, and a Monte Carlo rate with its binomial interval
    expected_max.py  the expected best score after k tuning trials (Tang et al.'s unbiased estimator) and its
                   bias-corrected bootstrap interval; Dodge et al.'s biased one beside it for comparison
    expected_max_coverage.py  that interval's coverage and the estimators' bias, simulated in the hard case
"""
