"""Run the checks every registered optimizer passes on an optimizer of your own, from its config file.

    python scripts/check_optimizer.py my_conf/optimizer/radam.yaml [PYTEST ARGS]

The file is an optimizer config carrying its registry facts under `registry:` (docs/your-own-optimizer.md), in a
folder laid out like conf/. The script puts that folder on OPTBENCH_CONFIG_PATH and runs the tests parametrised over
every optimizer on this one only: its config and facts agree, it builds its parameter groups, lowers the loss on a
tiny problem, its state survives a checkpoint (tests/test_optimizers.py), it trains end to end
(tests/test_train.py) and resumes mid-epoch to the same numbers (tests/test_resume.py). Its facts are read first,
so a file that cannot be an optimizer is one `error:` line (exit 2) before any test starts; otherwise the exit
status is pytest's. Needs a clone (the tests live in tests/) and the test extras (`make setup`).
"""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from optbench.config.config_path import CONFIG_PATH_VARIABLE  # noqa: E402
from optbench.errors import EXIT_BAD_INPUT, ConfigError  # noqa: E402

REGISTRY_TESTS = ("tests/test_optimizers.py", "tests/test_train.py", "tests/test_resume.py")
USAGE = "python scripts/check_optimizer.py my_conf/optimizer/NAME.yaml [PYTEST ARGS]"


def config_folder(path: Path) -> Path:
    """The config folder an optimizer file belongs to (`my_conf` of my_conf/optimizer/radam.yaml), checked."""
    if not path.is_file() or path.suffix != ".yaml":
        raise ConfigError(f"{path}: no such .yaml file; give your optimizer's config: {USAGE}")
    if path.parent.name != "optimizer":
        raise ConfigError(
            f"{path}: an optimizer config lives in a folder named optimizer/ of a config folder laid out like conf/ "
            f"(my_conf/optimizer/{path.name}); move it there"
        )
    folder = path.parent.parent.resolve()
    if folder == REPO / "conf":
        raise ConfigError(
            f"{path} is the package's own; its checks are these files whole: "
            f"python -m pytest -q {' '.join(REGISTRY_TESTS)}"
        )
    return folder


def with_folder(folder: Path) -> dict[str, str]:
    """This environment with the folder first on OPTBENCH_CONFIG_PATH and this checkout's src/ on PYTHONPATH."""
    env = dict(os.environ)
    listed = [part for part in env.get(CONFIG_PATH_VARIABLE, "").split(os.pathsep) if part]
    env[CONFIG_PATH_VARIABLE] = os.pathsep.join([str(folder), *listed])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def check_facts(name: str, env: dict[str, str]) -> None:
    """Its registry facts, read as every command will read them: a bad file is one line here."""
    os.environ[CONFIG_PATH_VARIABLE] = env[CONFIG_PATH_VARIABLE]
    from optbench.config.own_optimizers import own_specs

    if name not in own_specs():
        raise ConfigError(f"{name}: not found as an optimizer of {CONFIG_PATH_VARIABLE}={env[CONFIG_PATH_VARIABLE]}")


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(f"error: name your optimizer's config file: {USAGE}", file=sys.stderr)
        return EXIT_BAD_INPUT
    path, pytest_args = Path(argv[0]), argv[1:]
    try:
        env = with_folder(config_folder(path))
        check_facts(path.stem, env)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    command = [sys.executable, "-m", "pytest", "-q", *REGISTRY_TESTS, "-k", path.stem, *pytest_args]
    print(f"{CONFIG_PATH_VARIABLE}={env[CONFIG_PATH_VARIABLE]} {' '.join(command[1:])}", flush=True)
    return subprocess.call(command, cwd=REPO, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
