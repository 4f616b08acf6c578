"""Every relative link in the docs resolves: the file or folder exists, and a #anchor names a
heading of the target (GitHub's heading ids). Links to the web are not fetched."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "ARCHITECTURE.md",
    ROOT / "tables" / "README.md",
    ROOT / "benchmarks" / "README.md",
]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`[^`]*`")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text: str, drop_code: bool = True) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans removed (drop_code)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(CODE_SPAN.sub("", line) if drop_code else line)
    return out


def slug(heading: str) -> str:
    """GitHub's id of a heading: lower case, punctuation dropped (but - and _), spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link: its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The ids of a Markdown file's headings; a repeated one gets -1, -2, ... as on GitHub."""
    out: set[str] = set()
    for line in prose_lines(path.read_text(), drop_code=False):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            name, n = base, 0
            while name in out:
                n += 1
                name = f"{base}-{n}"
            out.add(name)
    return out


def links(path: Path) -> list[str]:
    return [m.group(1) for line in prose_lines(path.read_text()) for m in LINK.finditer(line)]


def broken(path: Path) -> list[str]:
    bad = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{target} (no such file)")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            bad.append(f"{target} (no heading #{anchor})")
    return bad


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    assert path.exists(), f"{path.relative_to(ROOT)} is one of the docs: it must exist"
    bad = broken(path)
    assert not bad, f"{path.relative_to(ROOT)}: " + "; ".join(bad)


def test_the_checker_finds_broken_links(tmp_path):
    (tmp_path / "b.md").write_text("# Some `code` heading: here\n\n## Again\n## Again\n")
    a = tmp_path / "a.md"
    a.write_text(
        "[ok](b.md#some-code-heading-here) [ok](b.md#again-1) [ok](#top) [web](https://x.y/z)\n"
        "# Top\n`[in code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n"
        "[gone](c.md) [bad anchor](b.md#nope) [self](#nope)\n"
    )
    assert broken(a) == [
        "c.md (no such file)",
        "b.md#nope (no heading #nope)",
        "#nope (no heading #nope)",
    ]
