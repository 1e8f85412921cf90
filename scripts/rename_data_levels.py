"""Rename a results folder's image-folder levels from the older path-hash names to content names.

    python scripts/rename_data_levels.py results/            # renames in place
    python scripts/rename_data_levels.py results/ --dry-run  # says what it would rename

Runs made before run directories were named by content sit under `imagefolder-<folder>-<hash of the
folder's absolute path>`. They are found and used as they are (optbench.rundir.data_level reads the data
fingerprint their records hold), so renaming is optional; this gives them the names new runs get,
`imagefolder-<folder>-<first 8 hex digits of the data fingerprint>`, read from those same records (the
images need not be here). The tuning records below the folder (tuning-*.json) that list runs of a renamed
level are rewritten to the new name, so their trials stay set aside. A level whose content name is taken
already is left alone and named.
"""

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from optbench.data.fingerprint import NAME_FINGERPRINT_HEX  # noqa: E402
from optbench.errors import DamagedRunFile  # noqa: E402
from optbench.formats import tuning_record  # noqa: E402
from optbench.formats.run_record import recorded_data  # noqa: E402


def content_name(level: Path) -> str | None:
    """The level's name by content, from the data fingerprint its runs recorded; None when it has none."""
    fingerprint = recorded_data(level)
    if not fingerprint or not fingerprint.startswith("imagefolder:"):
        return None
    stem = level.name.rsplit("-", 1)[0]  # imagefolder-<folder>
    return f"{stem}-{fingerprint.split(':')[1][:NAME_FINGERPRINT_HEX]}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--dry-run", action="store_true", help="say what would be renamed; rename nothing")
    args = parser.parse_args(argv)
    if not args.results_dir.is_dir():
        print(
            f"error: {args.results_dir} is not a folder: name the results folder (paths.results_dir)", file=sys.stderr
        )
        return 2
    try:  # every tuning record is checked before anything moves: a damaged one would be left listing old names
        for path in tuning_record.find_records(args.results_dir):
            tuning_record.read(path)
    except DamagedRunFile as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for level in sorted(args.results_dir.glob("imagefolder-*")):
        wanted = content_name(level) if level.is_dir() else None
        if wanted is None or wanted == level.name:
            continue
        target = level.with_name(wanted)
        if target.exists():
            print(f"left alone: {level} (its content name {wanted} is taken: move its runs across by hand)")
            continue
        if not args.dry_run:
            level.rename(target)
            for record in rewrite_tuning_records(args.results_dir, level.name, target.name):
                print(f"rewrote: {record}")
        print(f"{'would rename' if args.dry_run else 'renamed'}: {level} -> {target.name}")
    return 0


def rewrite_tuning_records(results_dir: Path, old: str, new: str) -> list[Path]:
    """Each tuning-*.json whose runs' `run_dir` (relative to the file's folder) lies in the renamed level."""
    rewritten = []
    for path in tuning_record.find_records(results_dir):
        prefix = (results_dir / old).resolve().relative_to(path.parent.resolve()).as_posix() + "/"
        if tuning_record.move_run_dirs(path, prefix, prefix.replace(old, new, 1)):
            rewritten.append(path)
    return rewritten


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
