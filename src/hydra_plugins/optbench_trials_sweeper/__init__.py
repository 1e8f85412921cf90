"""Hydra sweeper plugin `hydra/sweeper=optbench_trials`: a list of trials instead of a grid (trials_sweeper.py)."""
