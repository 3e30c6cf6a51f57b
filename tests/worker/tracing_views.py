"""A project's own view that enqueues a task, for test_tracing_django_view.py (its URLconf): the taskq client it
enqueues with is the test's, which shares the test's clock and Redis database."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

#: The test's taskq Client, set by the test before it sends the request.
clients: list[Any] = []


@csrf_exempt
def checkout(request: HttpRequest) -> JsonResponse:
    info = clients[0].enqueue("shop:receipt", {"order": 42}, max_retry=3)
    return JsonResponse({"task": info.id})


urlpatterns = [path("checkout/", checkout)]
