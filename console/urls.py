from django.contrib import admin
from django.urls import include, path

from console import views
from console.views.favicon import favicon

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("api/v1/", include("queues.api.urls")),
    path("", include("metrics.urls")),
    path("rq/", include("console.rq.urls")),
    path("", include("console.page_urls")),
]

# Under /api/ these answer JSON, as every API error does (queues.api.http); elsewhere they are Django's pages.
handler400 = "queues.api.http.bad_request"
handler500 = "queues.api.http.server_error"
