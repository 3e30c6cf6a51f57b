"""URLs of the RQ pages, mounted at rq/ by taskq/urls.py (as ``taskq:rq:<name>``).

Queue names and job ids travel as one path segment each, escaped by the console's segment converter rules
(``~2F`` for ``/``), so an RQ queue named "reports/daily" still gets its pages.
"""

from __future__ import annotations

from django.urls import path, register_converter

from taskq.console.converters import escape_segment, unescape_segment

from . import views


class RQSegmentConverter:
    """Any RQ queue name or job id as one segment. Unlike the console's queue converter it does not apply taskq's
    queue-name rules: RQ has its own, and an unknown name is the view's 404 to give."""

    regex = r"[^/]+"

    def to_python(self, value: str) -> str:
        return unescape_segment(value)

    def to_url(self, value: str) -> str:
        return escape_segment(value)


register_converter(RQSegmentConverter, "rqsegment")

app_name = "rq"
urlpatterns = [
    path("", views.rq_index, name="index"),
    path("<rqsegment:queue_name>/", views.rq_queue, name="queue"),
    path("<rqsegment:queue_name>/jobs/<rqsegment:job_id>/", views.rq_job, name="job"),
    path("<rqsegment:queue_name>/jobs/<rqsegment:job_id>/requeue/", views.rq_requeue, name="requeue"),
    path("<rqsegment:queue_name>/jobs/<rqsegment:job_id>/delete/", views.rq_delete, name="delete"),
]
