"""The standalone console's URLconf (``ROOT_URLCONF`` of console/settings.py): everything taskq serves, at the root,
as a project would include it, plus what a project has of its own (admin, login pages, a health probe, the
favicon) and the error handlers."""

from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.urls import include, path

from taskq.console import views
from taskq.console.views.favicon import favicon

urlpatterns = [
    path("admin/", admin.site.urls),
    # The console's own login page; its templates are under taskq/, where a project's own cannot be shadowed.
    path("accounts/login/", LoginView.as_view(template_name="taskq/login.html"), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("", include("taskq.urls")),
]

# Under /api/ these answer JSON, as every API error does (taskq.queues.api.http); elsewhere they are Django's pages.
handler400 = "taskq.queues.api.http.bad_request"
handler500 = "taskq.queues.api.http.server_error"
handler404 = "taskq.console.errors.page_not_found"
