"""Replace a generated block of README.md (the lines between two markers) from a function that writes it.

Shared by the scripts/readme_*.py scripts and the benchmarks that write a docs page's block: `with_block` swaps the
block; `main_for` is the readme scripts' command line (rewrite README, or `--check`: exit 1 when README differs, 2
when it cannot be made).
"""

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def with_block(readme_text: str, block: str, begin: str, end: str, document: str = "README.md") -> str:
    """README's (or `document`'s) text with the lines between the markers `begin` and `end` replaced by `block`."""
    start, stop = readme_text.find(begin), readme_text.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"{document} lacks the markers {begin!r} ... {end!r}: put them where the table goes")
    return readme_text[: start + len(begin)] + "\n" + block.strip() + "\n" + readme_text[stop:]


def main_for(argv: list[str], description: str, readme: Path, make_text: Callable[[str], str], stale: str) -> int:
    """`make_text(current README text)` -> the README it should be (ValueError, FileNotFoundError, KeyError: exit 2)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when README differs")
    args = parser.parse_args(argv)
    current = readme.read_text()
    try:
        wanted = make_text(current)
    except (ValueError, FileNotFoundError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.check:
        if wanted != current:
            print(stale, file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        readme.write_text(wanted)
    return 0
