"""Studies and hypotheses as data: the files under experiments/, parsed into frozen objects (PyYAML only).

study_spec.py       experiments/studies/*.yaml and hypothesis files' `study:` blocks -> Study
hypothesis_spec.py  experiments/hypotheses/*.yaml -> Hypothesis and its HypothesisTest
cross_workload_spec.py  experiments/cross-workload/parts.yaml -> CrossWorkload: each workload's study, the claims
"""
