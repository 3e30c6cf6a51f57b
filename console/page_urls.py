"""The console's pages and actions, included by taskq/urls.py (in the ``taskq`` namespace)."""

from __future__ import annotations

from django.urls import path, register_converter

from taskq.queues.engine.actions import WORKFLOW_ACTIONS

from .converters import QueueNameConverter, TaskIdConverter, TaskTypeConverter
from .views import (
    actions,
    dashboard,
    new_task,
    queues,
    redis,
    schedulers,
    search,
    series,
    servers,
    settings,
    tasks,
    workflows,
)
from .views.history import history as history_page
from .views.history import run_analytics

register_converter(QueueNameConverter, "queue")
register_converter(TaskIdConverter, "taskid")
register_converter(TaskTypeConverter, "tasktype")

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("servers/", servers.servers, name="servers"),
    # Before the server's own page: a worker's id always holds a ":" (host:pid:suffix), so it cannot be these.
    *(
        path(f"servers/{action}-all/", servers.control_all_servers, {"action": action}, name=f"servers-{action}-all")
        for action in ("quiet", "stop")
    ),
    path("servers/<str:server_id>/", servers.server_detail, name="server"),
    *(
        path(f"servers/<str:server_id>/{action}/", servers.control_server, {"action": action}, name=f"server-{action}")
        for action in ("quiet", "stop")
    ),
    path("history/", history_page, name="history"),
    path("history/run/", run_analytics, name="history-run"),
    path("schedulers/", schedulers.schedulers, name="schedulers"),
    *(
        path(f"schedulers/<str:entry_id>/{action}/", schedulers.entry_action, {"action": action}, name=f"cron-{action}")
        for action in ("run", "pause", "resume")
    ),
    path("redis/", redis.redis_info, name="redis"),
    path("settings/", settings.preferences, name="settings"),
    path("search/", search.search, name="search"),
    path("search/complete/", search.search_complete, name="search-complete"),
    path("workflows/", workflows.workflow_list, name="workflows"),
    path("search/act/", search.search_action, name="search-act"),
    path("tasks/new/", new_task.new_task, name="task-new"),
    path("queues/", dashboard.queue_list, name="queues"),
    path("queues/<queue:queue>/", queues.queue_detail, name="queue"),
    path("queues/<queue:queue>/pause/", actions.pause_queue, name="queue-pause"),
    path("queues/<queue:queue>/resume/", actions.resume_queue, name="queue-resume"),
    path("queues/<queue:queue>/delete/", actions.delete_queue, name="queue-delete"),
    path("queues/<queue:queue>/batch/", actions.task_batch, name="task-batch"),
    path("queues/<queue:queue>/all/", actions.state_bulk, name="task-bulk"),
    path("queues/<queue:queue>/tasks/<taskid:task_id>/", tasks.task_detail, name="task"),
    path("queues/<queue:queue>/tasks/<taskid:task_id>/edit/", tasks.edit_task, name="task-edit"),
    path("queues/<queue:queue>/tasks/<taskid:task_id>/again/", new_task.run_again, name="task-again"),
    path("queues/<queue:queue>/types/<tasktype:task_type>/", series.task_type, name="task-type"),
    path("queues/<queue:queue>/workflows/<taskid:workflow_id>/", workflows.workflow_detail, name="workflow"),
    *(
        path(
            f"queues/<queue:queue>/workflows/<taskid:workflow_id>/{action}/",
            workflows.workflow_action,
            {"action": action},
            name=f"workflow-{action}",
        )
        for action in WORKFLOW_ACTIONS
    ),
]
