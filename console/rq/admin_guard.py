"""django-rq's own admin pages (``/admin/django_rq/dashboard/queues/<index>/…``) look a queue up by its index in
``RQ_QUEUES`` and raise IndexError, a 500, for an index past the end. The bug is django-rq's; the pages are
reachable through our URLs, so this middleware answers those a 404 before django-rq's view runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse

#: The URL arguments of django-rq's admin views that index its list of queues.
QUEUE_INDEX_ARGS = ("queue_index", "scheduler_index")


class RQQueueIndexGuard:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view_func: Callable[..., Any], view_args: Any, view_kwargs: dict[str, Any]
    ) -> None:
        match = request.resolver_match
        if match is None or not (match.url_name or "").startswith("django_rq_"):
            return
        if not getattr(request.user, "is_staff", False):
            return  # the admin's own rule answers first (login page), and an outsider learns nothing of the list
        from django_rq.settings import get_queues_list  # optional: django-rq (taskq[rq])

        count = len(get_queues_list())
        for name in QUEUE_INDEX_ARGS:
            if name in view_kwargs and not 0 <= int(view_kwargs[name]) < count:
                raise Http404(f"no RQ queue with index {view_kwargs[name]} (RQ_QUEUES has {count})")
