"""The manual holds together: every relative link resolves, pages keep their size limits, and the
contracts are cited from the project's own architecture page only.

Links are read from Markdown by a small parser of its own (inline links and images, ``[text](target)``
outside code); a target resolves when the file exists relative to the page, and an anchor
(``page.md#section``) when the page has a heading whose GitHub-style slug is that anchor.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README_MAX = 12 * 1024
REFERENCE_MAX = 20 * 1024
# Pages written by a command, not by hand: their size follows from the run (`equimesh report --out
# docs` writes evaluation.md and its two companion pages, `make results` writes results.md, `equimesh
# paper` writes paper.md); their links are still checked.
GENERATED = {"evaluation.md", "evaluation-llm.md", "evaluation-checks.md", "results.md", "paper.md"}
# The history may be as long as it is; everything else under docs/ is a reference page or a guide.
UNLIMITED = GENERATED | {"journal.md"}

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md")), *sorted(DOCS.glob("*/*.md"))]


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans."""
    return CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*_~]", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for m in HEADING.finditer(FENCE.sub("", path.read_text())):
        s = slug(m.group(2))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def relative_links(path: Path) -> list[str]:
    return [
        t
        for t in LINK.findall(prose(path.read_text()))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("//")
    ]


def test_the_link_parser_and_slugs_follow_their_definitions():
    # Hand-written cases: GitHub drops punctuation and keeps hyphens and underscores' words.
    assert slug("Node storage: the lane rule") == "node-storage-the-lane-rule"
    assert slug("The schedule compiler (`rtl/rom.py`)") == "the-schedule-compiler-rtlrompy"
    assert LINK.findall('see [a](x.md#y) and ![fig](figures/f.png "t") but not `[b](z.md)`') == [
        "x.md#y",
        "figures/f.png",
        "z.md",
    ]  # the parser alone; prose() removes the code span
    assert prose("a `[b](z.md)` c") == "a  c"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in relative_links(page):
        file, _, anchor = target.partition("#")
        dest = page if not file else (page.parent / file).resolve()
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_readme_is_a_ten_minute_read_without_date_stamps():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= README_MAX
    assert not DATE.findall(text)


@pytest.mark.parametrize(
    "page", [p for p in sorted(DOCS.glob("*.md")) if p.name not in UNLIMITED], ids=lambda p: p.name
)
def test_reference_pages_stay_references(page):
    """At most 20 KB, and no date stamps: history belongs in journal.md."""
    text = page.read_text()
    assert len(text.encode()) <= REFERENCE_MAX, f"{page.name}: {len(text.encode())} bytes"
    assert not DATE.findall(text), f"{page.name}: date stamps {DATE.findall(text)[:3]}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_contracts_are_cited_from_the_project_only(page):
    """The contracts live in docs/architecture.md; no page names an outside design file."""
    assert "design" + ".md" not in page.read_text()
