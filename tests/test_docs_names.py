"""The maps tell the truth: every source file (`studies/plan.py`, `src/train.py`) and every optbench module or
name (`optbench.identity.NUMBERS_FREE_KEYS`) that the documentation, the configs' comments and the code's
docstrings and comments mention exists, so a renamed module cannot leave its old name behind; the map of
docs/extending.md names every module; and a test's docstring says what it pins, not where it came from.

Documentation: README.md, docs/*.md (the published studies' generated reports aside), experiments/, benchmarks/
and results/ READMEs. Code: the docstrings and comments of every .py file of the checkout (string literals are
data, not names). A path is found from the checkout's root, src/, src/optbench/ or an installed package's folder
(`hydra/_internal/utils.py`); a bare file name anywhere in the checkout; a dotted name's module by its file, and
the name after it among the module's top-level definitions and imports.
"""

import ast
import io
import re
import site
import sys
import tokenize
from pathlib import Path

import pytest
from conftest import REPO

PAGES = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "experiments" / "README.md",
    REPO / "benchmarks" / "README.md",
    REPO / "results" / "README.md",
]
CONFIGS = sorted((REPO / "conf").rglob("*.yaml"))
SKIPPED_FOLDERS = {".venv", ".git", ".cache", "results", "data", "__pycache__"}
SOURCES = sorted(path for path in REPO.rglob("*.py") if not SKIPPED_FOLDERS & set(path.relative_to(REPO).parts))
PACKAGE = REPO / "src" / "optbench"
# `optbench.<tag>` names that are not modules: the experiment trackers' tags and the train.log logger.
NOT_MODULES = {
    "optbench.run_id",
    "optbench.attempt",
    "optbench.setting",
    "optbench.study",
    "optbench.run_dir",
    "optbench.status",
    "optbench.details",
}

FILE_REFERENCE = re.compile(r"(?<![\w./<>{}-])((?:[\w-]+/)*\w+\.py)\b")
DOTTED_REFERENCE = re.compile(r"(?<![\w./])optbench(?:\.\w+)+")


def code_text(path: Path) -> str:
    """A .py file's docstrings and comments, one per line group (what a reader takes for prose)."""
    source = path.read_text(encoding="utf-8")
    parts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            parts.append(ast.get_docstring(node, clean=False) or "")
    parts += [
        token.string
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    return "\n".join(parts)


def config_comments(path: Path) -> str:
    return "\n".join(line.split("#", 1)[1] for line in path.read_text().splitlines() if "#" in line)


def file_roots() -> list[Path]:
    installed = [Path(folder) for folder in (*site.getsitepackages(), *sys.path) if folder.endswith("site-packages")]
    return [REPO, REPO / "src", PACKAGE, *installed]


CHECKOUT_FILE_NAMES = {path.name for path in SOURCES}


def file_exists(reference: str, roots: list[Path]) -> bool:
    if "/" not in reference:
        return reference in CHECKOUT_FILE_NAMES
    return any((root / reference).is_file() for root in roots)


def top_level_names(module_file: Path) -> set[str]:
    names = set()
    for node in ast.parse(module_file.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def dotted_exists(reference: str, package: Path = PACKAGE) -> bool:
    """A dotted name under optbench: its module exists (a package or a file), and the name after it, if any, is
    defined there."""
    folder, parts = package, reference.split(".")[1:]
    for position, part in enumerate(parts):
        if (folder / part / "__init__.py").is_file():
            folder = folder / part
            continue
        module = folder / f"{part}.py" if (folder / f"{part}.py").is_file() else None
        rest = parts[position + 1 :] if module else parts[position:]
        module = module or folder / "__init__.py"
        return not rest or rest[0] in top_level_names(module)
    return True


def stale_names(text: str, where: str, roots: list[Path], package: Path = PACKAGE) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        found += [
            f"{where}:{number}: {match}" for match in FILE_REFERENCE.findall(line) if not file_exists(match, roots)
        ]
        found += [
            f"{where}:{number}: {match.group(0)}"
            for match in DOTTED_REFERENCE.finditer(line)
            if match.group(0) not in NOT_MODULES and not dotted_exists(match.group(0), package)
        ]
    return found


def texts() -> list[tuple[str, str]]:
    found = [(str(page.relative_to(REPO)), page.read_text()) for page in PAGES if page.is_file()]
    found += [(str(path.relative_to(REPO)), config_comments(path)) for path in CONFIGS]
    return found + [(str(path.relative_to(REPO)), code_text(path)) for path in SOURCES]


@pytest.mark.parametrize("where, text", texts(), ids=[where for where, _ in texts()])
def test_every_named_file_and_module_exists(where, text):
    assert stale_names(text, where, file_roots()) == []


def test_a_stale_name_is_caught():
    text = (
        "see studies/cli.py and optbench/studies/plan.py, `optbench.aggregate.compare`, optbench.identity.flatten,"
        "\n"
        "optbench.identity.gone, optbench.run_id, optbench.formats.run_summary, hydra/_internal/utils.py, "
        "<name>.py, {stem}.py"
    )
    assert stale_names(text, "page.md", file_roots()) == [
        "page.md:1: studies/cli.py",
        "page.md:1: optbench.aggregate.compare",
        "page.md:2: optbench.identity.gone",
    ]


def test_the_texts_are_found():
    names = {where for where, _ in texts()}
    assert {
        "README.md",
        "docs/extending.md",
        "conf/config.yaml",
        "src/optbench/rundir.py",
        "tests/test_house.py",
    } <= names


def unmapped_in_extending(page: Path = REPO / "docs" / "extending.md", package: Path = PACKAGE) -> list[str]:
    """The modules of optbench, the entry points of src/ and the scripts/ the map of docs/extending.md ("Where
    things live", its first code block) does not name; with the check above, the map matches the tree."""
    block = page.read_text().split("## Where things live", 1)[1].split("```")[1]
    words = set(re.findall(r"[\w.-]+", block)) | set(re.findall(r"\w+", block))
    wanted = [
        *(path.stem for path in sorted(package.rglob("*.py")) if path.name != "__init__.py"),
        *(path.name for path in sorted((package.parent).glob("*.py"))),
        *(path.name for path in sorted((REPO / "scripts").iterdir()) if path.suffix in (".py", ".sh")),
    ]
    return [name for name in wanted if name not in words]


def test_the_map_in_extending_names_every_module_entry_point_and_script():
    assert unmapped_in_extending() == []


def test_the_map_check_sees_a_module_it_leaves_out(tmp_path):
    page = tmp_path / "extending.md"
    page.write_text((REPO / "docs" / "extending.md").read_text().replace("rundir.py", "run_dirs.py", 1))
    assert unmapped_in_extending(page) == ["rundir"]


# Where a test came from is history (the commit says it); its docstring says what behaviour it pins.
PROVENANCE = re.compile(r"\bthe issue\b|\bissue's\b|\breproduction\b|\bonce (?:made|gave)\b", re.IGNORECASE)


def provenance_lines(text: str, where: str) -> list[str]:
    return [
        f"{where}:{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if PROVENANCE.search(line)
    ]


def test_test_docstrings_say_what_they_pin_not_where_they_came_from():
    tests = sorted((REPO / "tests").rglob("*.py"))
    found = [line for path in tests for line in provenance_lines(code_text(path), str(path.relative_to(REPO)))]
    assert found == []


def test_the_provenance_check_sees_a_test_docstring_citing_its_origin():
    assert provenance_lines('"""The issue\'s reproduction: p = 0."""\n', "t.py") == [
        't.py:1: """The issue\'s reproduction: p = 0."""'
    ]


# ---- short dotted names: `identity.NUMBERS_FREE_KEYS`, `device/sharing.parallel_jobs` ------------------
SHORT_DOTTED = re.compile(r"((?:\w+/)*)(\w+)\.([A-Za-z_]\w*)(?:\(.*\))?")
# Config keys read like module names (`train.rerun`, `noise.rate`, `data.pipeline`): a name whose first part is
# a top-level key of the config (or a config group) is a setting, not a module.
CONFIG_ROOTS = {path.stem for path in (REPO / "conf").iterdir()} | {
    line.split(":")[0] for line in (REPO / "conf" / "config.yaml").read_text().splitlines() if re.match(r"\w+:", line)
}


FILE_SUFFIXES = {"py", "md", "yaml", "json", "jsonl", "csv", "npz", "pt", "sh", "txt", "toml", "ipynb", "tex", "png"}


def module_file(folder: str, stem: str, package: Path = PACKAGE) -> Path | None:
    """The module a short dotted name's first part names: by its path when it has one (`data/human_labels`), else
    the one module of the package with that name; None when it names no module (a config key, a file name)."""
    if folder:
        found = [root / folder / f"{stem}.py" for root in (package.parent.parent, package.parent, package)]
        return next((path for path in found if path.is_file()), None)
    if stem in CONFIG_ROOTS:
        return None
    candidates = [path for path in package.rglob(f"{stem}.py") if path.name != "__init__.py"]
    return candidates[0] if len(candidates) == 1 else None


def stale_short_names(text: str, where: str, package: Path = PACKAGE) -> list[str]:
    """`module.NAME` spans (in backticks) whose module exists but defines no NAME at its top level."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for span in re.findall(r"`([^`]+)`", line):
            match = SHORT_DOTTED.fullmatch(span.strip())
            if not match or span.startswith("optbench."):  # a full optbench dotted name: the check above
                continue
            folder, stem, name = match.groups()
            if name in FILE_SUFFIXES:
                continue
            module = module_file(folder, stem, package)
            if module is not None and name not in top_level_names(module):
                found.append(f"{where}:{number}: {span}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(REPO)) for page in PAGES])
def test_every_short_dotted_name_a_page_cites_exists(page):
    assert stale_short_names(page.read_text(), str(page.relative_to(REPO))) == []


def test_a_stale_short_dotted_name_is_caught():
    text = (
        "`data/human_labels.NUMPY_ARRAY_GLOBALS` and `identity.GONE`; `identity.NUMBERS_FREE_KEYS`,\n"
        "`device/sharing.parallel_jobs`, `train.rerun`, `summary.json`, `run_summary.Summary(status=...)`"
    )
    assert stale_short_names(text, "page.md") == [
        "page.md:1: data/human_labels.NUMPY_ARRAY_GLOBALS",
        "page.md:1: identity.GONE",
    ]


def test_the_numbers_free_list_in_runs_md_is_the_code_s():
    """docs/runs.md names every one of identity.NUMBERS_FREE_KEYS, and nothing else, in its run-identity list."""
    from optbench import identity

    text = (REPO / "docs" / "runs.md").read_text()
    listed = text.split("`optbench.identity.NUMBERS_FREE_KEYS`", 1)[1].split("), plus", 1)[0]
    named = {name.removesuffix(".*") for name in re.findall(r"`([\w.*]+)`", listed)}
    assert named == set(identity.NUMBERS_FREE_KEYS)
    assert f"all {len(identity.NUMBERS_FREE_KEYS)} of them" in listed
