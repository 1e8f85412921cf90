"""The command line rule every entry point shares: a bad flag is one `error:` line, exit 2, nothing written.

argparse prints its usage over several lines and exits on its own; README promises one `error: ...` line naming
the fix. `OneLineParser` raises ConfigError instead (the entry point prints it and returns EXIT_BAD_INPUT, before
any work), ending with where the help is (`python src/aggregate.py --help`), and names the nearest known flag of
one that is misspelt (`--targt-acc` -> did you mean --target-acc?). Standard library only: parsing never loads
torch.
"""

import argparse
import difflib
from typing import NoReturn

from optbench.errors import ConfigError

SIMILAR_ENOUGH = 0.6  # difflib's ratio: one or two letters swapped, dropped or added in a flag of ten


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message}{self.suggestion(message)} ({self.prog} --help)")

    def suggestion(self, message: str) -> str:
        """` (did you mean --target-acc?)` for the unrecognised flags that are near a known one; "" otherwise."""
        if not message.startswith("unrecognized arguments: "):
            return ""
        known = [flag for flag in self._option_string_actions if flag.startswith("--")]
        words = message.removeprefix("unrecognized arguments: ").split()
        nearest = [
            difflib.get_close_matches(word.split("=", 1)[0], known, n=1, cutoff=SIMILAR_ENOUGH)
            for word in words
            if word.startswith("--")
        ]
        found = [f"{match[0]}?" for match in nearest if match]
        return f" (did you mean {' '.join(found)})" if found else ""
