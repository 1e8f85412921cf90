"""The aggregator's output folder: atomic writes, and clean-up of its own stale files only.

Every file is written through optbench.rundir's one atomic writer (a temporary sibling, fsynced,
renamed into place), so a reader (or a crash) never sees half a table. The folder keeps a manifest of the files this
aggregator wrote; at the end of a
run, files from an earlier manifest that were not written again (a figure for a setting that no
longer exists) are removed. Nothing else is ever deleted, inside or outside the folder.
"""

import re
from pathlib import Path

from optbench.fileio import write_bytes_atomically

MANIFEST = ".aggregate-manifest"


class OutputDir:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.written: list[str] = []  # paths relative to root, in writing order

    def path(self, relative: str) -> Path:
        return self.root / relative

    def write_bytes(self, relative: str, payload: bytes) -> Path:
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomically(target, payload)
        self.written.append(relative)
        return target

    def write_text(self, relative: str, text: str) -> Path:
        return self.write_bytes(relative, text.encode("utf-8"))

    def write_figure(self, figure, stem: str) -> list[str]:
        """Save `figure` as stem.png and stem.pdf; returns both relative paths."""
        import io

        paths = []
        for extension in ("png", "pdf"):
            buffer = io.BytesIO()
            figure.savefig(
                buffer, format=extension, dpi=150
            )  # constrained layout already fits; "tight" would draw twice
            # The first save fixed the layout; laying out again for the PDF costs time and changes nothing.
            figure.set_layout_engine("none")
            relative = f"{stem}.{extension}"
            self.write_bytes(relative, buffer.getvalue())
            paths.append(relative)
        return paths

    def finish(self) -> list[str]:
        """Write the manifest; remove files an earlier run of the aggregator wrote and this one did not."""
        previous = self.path(MANIFEST)
        stale = []
        if previous.is_file():
            old = {line.strip() for line in previous.read_text().splitlines() if line.strip()}
            for relative in sorted(old - set(self.written)):
                target = self.path(relative)
                # Only plain relative paths inside root that we recorded ourselves.
                if ".." not in Path(relative).parts and target.is_file():
                    target.unlink()
                    stale.append(relative)
        self.write_text(MANIFEST, "\n".join(sorted(set(self.written))) + "\n")
        return stale


def slug(label: str) -> str:
    """'cifar10, symmetric 20%, batch_size=8' -> 'cifar10-symmetric-20-batch_size-8': safe in file names,
    shells, Markdown links and LaTeX labels (no '=', ',' or space). names.py keeps the result short."""
    return re.sub(r"[^A-Za-z0-9._]+", "-", label).strip("-.").lower() or "all"
