"""The documentation holds together: every relative link in README.md, docs/, experiments/, benchmarks/ and
colab/ names a file that exists, and every `#anchor` a heading of its target (GitHub's heading slugs);
README stays short and starts with the commands.

Links inside code (fenced blocks, `inline code`) are not links and are skipped; absolute URLs
(http:, https:, mailto:) are not checked (no network here). The published study's generated report
(docs/cpu-study/) is checked like every other page.
"""

import re
from pathlib import Path

import pytest
from conftest import REPO

README_MAX_LINES = 250  # the commands first, three workloads, then the published studies' answers
README_FIRST_SCREEN = 60  # lines: set-up and the first training command come within them
# What a newcomer types first: set-up, one run, the smoke check, a study, the aggregator, replay.
FIRST_SCREEN_COMMANDS = (
    "make quick",
    "make test",
    "python src/train.py ",
    "python test_setup.py",
    "python src/study.py ",
    "python src/aggregate.py ",
    "python src/replay.py ",
)
FENCE = re.compile(r"^(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis. A title
# ("...") after the target is allowed and ignored.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


DOC_FOLDERS = ("docs", "experiments", "benchmarks", "colab")  # not results/: it holds a user's runs


def pages() -> list[Path]:
    found = [REPO / "README.md", *(page for folder in DOC_FOLDERS for page in sorted((REPO / folder).rglob("*.md")))]
    return [page for page in found if page.is_file()]


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code removed."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced:
            lines.append((number, INLINE_CODE.sub("", line)))
    return lines


def links(text: str) -> list[tuple[int, str]]:
    return [(number, match.group(1)) for number, line in prose_lines(text) for match in LINK.finditer(line)]


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation other than - and _ removed,
    each space a hyphen (runs of hyphens kept, as GitHub keeps them)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in heading_lines(page.read_text()):
        slug = github_slug(line)
        count = seen.get(slug, 0)
        found.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return found


def heading_lines(text: str) -> list[tuple[int, str]]:
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            lines.append((number, match.group(2)))
    return lines


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    """One line per link of `page` that points nowhere: the page's line (relative to `root`), the link and why."""
    problems = []
    for number, target in links(page.read_text()):
        if EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(root)}:{number}: ({target})"
        if not linked.exists():
            problems.append(f"{where} names a file that does not exist")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append(f"{where} names no heading of {linked.relative_to(root)}")
    return problems


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_the_pages_are_found():
    names = {str(page.relative_to(REPO)) for page in pages()}
    assert {"README.md", "experiments/README.md", "docs/runs.md", "docs/extending.md"} <= names


def test_readme_stays_short():
    lines = len((REPO / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move reference text into docs/"


def test_readme_starts_with_the_commands_and_links_the_glossary():
    """A newcomer's first screen: set-up (make quick, make test) and the first training command within
    README_FIRST_SCREEN lines, and the glossary of the harness's words linked from there."""
    lines = (REPO / "README.md").read_text().splitlines()
    first = {
        wanted: next((number for number, line in enumerate(lines, 1) if line.startswith(wanted)), None)
        for wanted in FIRST_SCREEN_COMMANDS
    }
    late = {wanted: number for wanted, number in first.items() if number is None or number > README_FIRST_SCREEN}
    assert late == {}, f"README's first {README_FIRST_SCREEN} lines lack (line where found): {late}"
    screen = "\n".join(lines[:README_FIRST_SCREEN])
    assert "(docs/glossary.md)" in screen, "README's first screen does not link docs/glossary.md"


GLOSSARY_WORDS = ("setting", "arm", "study", "tuning", "rung", "look", "pilot", "identity", "verdict", "resolution")
GLOSSARY_WORDS += ("workload", "headline metric", "budget unit")


def test_the_glossary_defines_each_word_once():
    """docs/glossary.md has one heading per word of the harness, so `glossary.md#rung` links to its definition."""
    headings = [heading.lower() for _, heading in heading_lines((REPO / "docs" / "glossary.md").read_text())]
    assert {word: headings.count(word) for word in GLOSSARY_WORDS} == dict.fromkeys(GLOSSARY_WORDS, 1)


def test_a_missing_file_and_a_missing_heading_are_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "target.md").write_text("# Title\n\n## The `tune:` block, in full\n\n## Title\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "[ok](target.md) [ok](target.md#the-tune-block-in-full) [ok](target.md#title-1) [ok](#here)\n"
        "## Here\n"
        "[gone](missing.md) and [no heading](target.md#nowhere) and [web](https://example.org/x)\n"
        "`[in code](missing-too.md)`\n```\n[in a block](missing-three.md)\n```\n"
    )
    assert broken_links(page, root=tmp_path) == [
        "docs/page.md:3: (missing.md) names a file that does not exist",
        "docs/page.md:3: (target.md#nowhere) names no heading of docs/target.md",
    ]


@pytest.mark.parametrize(
    "heading, slug",
    [
        ("Experiment trackers (`conf/logger/`)", "experiment-trackers-conflogger"),
        (
            "A durable mirror: train on local disk, keep the results elsewhere",
            "a-durable-mirror-train-on-local-disk-keep-the-results-elsewhere",
        ),
        ("torch.compile on this CPU", "torchcompile-on-this-cpu"),
        (
            "How many seeds: the planner and the study that stops when decided",
            "how-many-seeds-the-planner-and-the-study-that-stops-when-decided",
        ),
        ("MPS, narrow models, memory", "mps-narrow-models-memory"),
        ("Verdict rule (in five lines)", "verdict-rule-in-five-lines"),
        ("A study's epoch: evaluation", "a-studys-epoch-evaluation"),
        ("snake_case stays", "snake_case-stays"),
    ],
)
def test_slugs_follow_github(heading, slug):
    assert github_slug(heading) == slug
