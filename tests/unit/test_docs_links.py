"""Relative links in the Markdown documentation reach an existing file and, with a
`#fragment`, a heading of that file (GitHub's anchors); README's index lists every doc."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted({ROOT / "README.md", ROOT / "CONTRIBUTING.md", *ROOT.glob("docs/*.md"),
               *ROOT.glob("bench/*.md"), *ROOT.glob("examples/*.md")})

LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def _prose_lines(path: Path) -> list[str]:
    """The file's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's heading anchor: lowercase, punctuation dropped, spaces become '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, seen = set(), {}
    for line in _prose_lines(path):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[str]:
    return [target for line in _prose_lines(path) for target in LINK.findall(line)]


def test_slug_follows_github():
    assert slug("Durable state (`--data-dir`)") == "durable-state---data-dir"
    assert slug("`kcoord check` against any broker") == "kcoord-check-against-any-broker"
    assert slug("Looking at groups: `kcoord groups`, `kcoord wait`") == \
        "looking-at-groups-kcoord-groups-kcoord-wait"
    assert slug("Timing parity (`bench/timing_parity.py`)") == "timing-parity-benchtiming_paritypy"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path):
    broken = []
    for target in links(doc):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, fragment = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and (dest.suffix != ".md" or fragment not in anchors(dest)):
            broken.append(f"{target}: no heading with anchor #{fragment} in {dest.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


def test_readme_indexes_every_doc():
    readme_links = {(ROOT / t.partition("#")[0]).resolve() for t in links(ROOT / "README.md")}
    missing = [str(p.relative_to(ROOT)) for p in sorted(ROOT.glob("docs/*.md")) if p.resolve() not in readme_links]
    assert not missing, f"README.md does not link {missing}"
