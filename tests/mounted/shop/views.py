"""The project's own page, named ``dashboard`` as the console's main page is."""

from django.http import HttpRequest, HttpResponse
from django.urls import reverse


def dashboard(request: HttpRequest) -> HttpResponse:
    return HttpResponse(f"<h1>The shop's own dashboard</h1><p>at {reverse('dashboard')}</p>")
