"""Validation of the query string of an RQ queue page: registry tab, page and page size."""

from __future__ import annotations

from django import forms

from .bridge import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, REGISTRIES


class JobListForm(forms.Form):
    """``?registry=failed&page=2&size=50``; every field optional, with the defaults of a first visit.

    A page past the end is not an error (the page says so); a size above the maximum is clamped, since asking
    for "more" is an honest request. Anything that is not a number, or a registry RQ does not have, is a 400.
    """

    registry = forms.ChoiceField(choices=[(name, name) for name in REGISTRIES], required=False)
    page = forms.IntegerField(min_value=1, max_value=10**9, required=False)
    size = forms.IntegerField(min_value=1, max_value=10**6, required=False)

    def clean_registry(self) -> str:
        return self.cleaned_data.get("registry") or "queued"

    def clean_page(self) -> int:
        return self.cleaned_data.get("page") or 1

    def clean_size(self) -> int:
        return min(self.cleaned_data.get("size") or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)

    def error_text(self) -> str:
        """The form's errors as one line for the 400 page."""
        return "; ".join(f"{name}: {' '.join(errors)}" for name, errors in self.errors.items())
