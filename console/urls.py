from functools import partial

from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.urls import include, path
from django.views.defaults import page_not_found

from taskq.console import views
from taskq.console.views.favicon import favicon

urlpatterns = [
    path("admin/", admin.site.urls),
    # The console's own login page; its templates are under taskq/, where a project's own cannot be shadowed.
    path("accounts/login/", LoginView.as_view(template_name="taskq/login.html"), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("api/v1/", include("taskq.queues.api.urls")),
    path("", include("taskq.metrics.urls")),
    path("rq/", include("taskq.console.rq.urls")),
    path("", include("taskq.console.page_urls")),
]

# Under /api/ these answer JSON, as every API error does (taskq.queues.api.http); elsewhere they are Django's pages.
handler400 = "taskq.queues.api.http.bad_request"
handler500 = "taskq.queues.api.http.server_error"
handler404 = partial(page_not_found, template_name="taskq/404.html")
