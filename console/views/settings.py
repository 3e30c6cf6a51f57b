"""The user's own console preferences: rows per page and theme."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from ..access import user_form
from ..forms import PreferenceForm
from ..models import ConsolePreference
from ..page_render import render


@user_form
def preferences(request: HttpRequest) -> HttpResponse:
    """Access: viewers, for their own row only. GET shows the form; POST (CSRF-checked) saves it.

    Not an operator action: it changes nothing in Redis, so read-only mode does not apply.
    """
    instance = ConsolePreference.for_user(request.user)
    if request.method == "POST":
        form = PreferenceForm(request.POST, instance=instance)
        if form.is_valid():
            form.save()
            messages.success(request, "Settings saved.")
            return redirect("taskq:settings")
        return render(request, "taskq/settings.html", {"form": form}, status=400)
    return render(request, "taskq/settings.html", {"form": PreferenceForm(instance=instance)})
