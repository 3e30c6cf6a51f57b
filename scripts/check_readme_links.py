"""Check every relative link of a Markdown file outside the docs site (the README): the file it names must exist,
and a ``#anchor`` must be a heading of that Markdown file (or of the file itself, for a bare ``#anchor``).

The site's own pages need no such check: ``sphinx-build -W`` fails on their broken links (see docs/conf.py). The
README is read on GitHub, not built, so nothing else would notice a page renamed or a heading reworded. Anchors
are made as the site and GitHub make them (MyST's GitHub slugs), so a link that passes here works on both.

    python scripts/check_readme_links.py [README.md ...]    # exit 1 and one line per broken link
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.anchors import anchors_plugin
from myst_parser.slugs import github_slugify

# Tables, as GitHub renders them; the anchors plugin gives every heading the id GitHub and the site give it.
MARKDOWN = MarkdownIt("commonmark").enable("table").use(anchors_plugin, max_level=6, slug_func=github_slugify)


def _tokens(path: Path) -> list[Token]:
    return MARKDOWN.parse(path.read_text(encoding="utf-8"))


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


def anchors(path: Path) -> set[str]:
    """The heading anchors of a Markdown file."""
    return {str(t.attrs["id"]) for t in _walk(_tokens(path)) if t.type == "heading_open" and "id" in t.attrs}


def relative_links(path: Path) -> list[str]:
    """Every link and image target of a Markdown file that stays in the repository (no scheme, no host)."""
    found = []
    for token in _walk(_tokens(path)):
        target = token.attrs.get("href") if token.type == "link_open" else token.attrs.get("src")
        if token.type in ("link_open", "image") and target:
            parts = urlsplit(str(target))
            if not parts.scheme and not parts.netloc:
                found.append(str(target))
    return found


def broken_links(path: Path) -> list[str]:
    """The relative links of ``path`` that point at no file, or at no heading of the Markdown file they name."""
    broken = []
    for link in relative_links(path):
        parts = urlsplit(link)
        target = (path.parent / unquote(parts.path)).resolve() if parts.path else path.resolve()
        if not target.exists():
            broken.append(f"{path.name}: {link}: no such file")
        elif parts.fragment:
            if target.suffix != ".md":
                broken.append(f"{path.name}: {link}: an anchor into a file that is not Markdown")
            elif unquote(parts.fragment) not in anchors(target):
                broken.append(f"{path.name}: {link}: no heading with that anchor")
    return broken


def main(argv: list[str]) -> int:
    files = [Path(name) for name in argv] or [Path(__file__).resolve().parents[1] / "README.md"]
    broken = [line for path in files for line in broken_links(path)]
    for line in broken:
        print(line, file=sys.stderr)
    checked = sum(len(relative_links(path)) for path in files)
    print(f"check_readme_links: {checked} relative links checked, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
