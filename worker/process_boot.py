"""Imported first in every handler process of the process pool (its forkserver preloads this module before the
handler modules): sets Django up when the worker runs under Django, so handler modules that use models import
in a child exactly as they did in the worker. The import is the whole point of this module."""

from __future__ import annotations

import os

if os.environ.get("DJANGO_SETTINGS_MODULE"):
    import django  # optional: only under Django

    django.setup()
