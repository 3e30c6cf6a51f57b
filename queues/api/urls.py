"""Routes of ``api/v1/`` (included by ``taskq/urls.py``, as ``taskq:api:<name>``). ``openapi.py`` documents
each one; a test keeps the two in step. Queue names and task ids are single path segments: ``/`` inside one is
written ``~2F``, ``~`` as ``~7E``."""

from __future__ import annotations

from django.urls import path, re_path

from . import views

app_name = "api"

urlpatterns = [
    path("openapi.json", views.openapi, name="openapi"),
    path("consume", views.consume, name="consume"),
    path("queues/<str:queue>/tasks", views.publish, name="publish"),
    path("queues/<str:queue>/tasks/<str:task_id>", views.task, name="task"),
    path("queues/<str:queue>/tasks/<str:task_id>/ack", views.ack, name="ack"),
    path("queues/<str:queue>/tasks/<str:task_id>/fail", views.fail, name="fail"),
    path("queues/<str:queue>/tasks/<str:task_id>/extend", views.extend, name="extend"),
    path("queues/<str:queue>/peek", views.peek, name="peek"),
    path("queues/<str:queue>/size", views.size, name="size"),
    path("queues/<str:queue>/deadletters", views.dead_letters, name="dead-letters"),
    path("queues/<str:queue>/respawn", views.respawn_dead_letters, name="respawn"),
    path("queues/<str:queue>/deadletters/<str:task_id>", views.dead_letter, name="dead-letter"),
    path("queues/<str:queue>/deadletters/<str:task_id>/respawn", views.respawn_dead_letter, name="dead-letter-respawn"),
    # Anything else under /api/v1/ is a JSON 404, not the console's HTML one.
    re_path(r"^(?P<rest>.*)$", views.not_found, name="not-found"),
]
