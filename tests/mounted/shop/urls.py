"""The project's URLs: its own pages, one named ``dashboard`` like the console's, and the console under ops/."""

from django.contrib import admin
from django.urls import include, path

from . import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("ops/", include("taskq.urls")),
]
