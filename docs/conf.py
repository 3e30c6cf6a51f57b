"""Sphinx configuration of taskq's documentation site (`make docs` builds it into build/docs).

The pages are Markdown (MyST). The build runs with -W, so every warning fails it: a `[..](page.md#anchor)` link
to a page or heading that does not exist (MyST resolves heading anchors, see myst_heading_anchors) and a page
left out of every toctree both fail `make docs` and tests/test_docs_site.py.
"""

from __future__ import annotations

project = "taskq"
author = "the taskq developers"
copyright = "2026, the taskq developers"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
# Images the pages show, not pages.
exclude_patterns = ["screenshots/*"]

# Slugs for headings down to ####, as GitHub makes them, so `page.md#a-heading` works on the site and on GitHub.
myst_heading_anchors = 4

# Code blocks without a language (the architecture diagram, shell transcripts) are shown as written, not guessed at.
highlight_language = "none"

html_theme = "furo"
html_title = "taskq"
# The pages are read on GitHub too; a "show source" link to a copy of the Markdown adds nothing.
html_show_sourcelink = False
