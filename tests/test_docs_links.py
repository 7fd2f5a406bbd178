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


def _text(heading: str) -> str:
    """A heading's text as rendered: links to their text, code spans to their content, emphasis dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    parts = re.split(r"(`[^`]*`)", text)  # inside code spans `_` is text, outside it may be emphasis
    return "".join(p[1:-1] if p.startswith("`") else re.sub(r"[*_~]", "", p) for p in parts)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (word characters, hyphens and
    spaces kept), spaces to hyphens; a run of hyphens stays as it is."""
    text = re.sub(r"[^\w\- ]", "", _text(heading).strip().lower())
    return text.replace(" ", "-")


def site_slug(heading: str) -> str:
    """The docs site's anchor (MkDocs, Python-Markdown's ``toc.slugify``): as GitHub's, but a run of
    hyphens and spaces becomes one hyphen."""
    text = re.sub(r"[^\w\s-]", "", _text(heading)).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    """The anchors a link may name on both renderings of ``path``: GitHub's and the docs site's (a heading
    whose two anchors differ offers neither, so a link to it works in one place only)."""
    github: dict[str, int] = {}
    site: dict[str, int] = {}
    out = set()
    for m in HEADING.finditer(FENCE.sub("", path.read_text())):
        g, t = slug(m.group(2)), site_slug(m.group(2))
        n, k = github.get(g, 0), site.get(t, 0)
        github[g], site[t] = n + 1, k + 1
        g, t = (g if n == 0 else f"{g}-{n}"), (t if k == 0 else f"{t}_{k}")
        if g == t:
            out.add(g)
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
    # An underscore is a word character in a code span; a run of hyphens stays on GitHub, not on the site.
    assert (
        slug("Relay (`rtl/packet_router.py`)")
        == site_slug("Relay (`rtl/packet_router.py`)")
        == "relay-rtlpacket_routerpy"
    )
    assert slug("Pipelined (issue 15, `--pipeline 1`)") == "pipelined-issue-15---pipeline-1"
    assert site_slug("Pipelined (issue 15, `--pipeline 1`)") == "pipelined-issue-15-pipeline-1"
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
