"""Hydra launcher `hydra/launcher=slurm`: submitit's SLURM launcher, with sbatch's refusals as one line
(slurm_launcher.py)."""
