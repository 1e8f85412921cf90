"""Run a study from experiments/ as plain Hydra multiruns of src/train.py; see optbench/studies/study_command.py.

python src/study.py --list
python src/study.py full --dry-run
python src/study.py H3 --launcher parallel
"""

import sys

import optbench  # noqa: F401  (first: sets PYTORCH_ENABLE_MPS_FALLBACK before torch loads)
from optbench.studies.study_command import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
