"""Per-user console preferences. Queue and task state lives in Redis, not here."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

ROWS_PER_PAGE_CHOICES = [(10, "10"), (20, "20"), (50, "50"), (100, "100")]
DEFAULT_ROWS_PER_PAGE = 20


class ConsolePreference(models.Model):
    """How one user likes the console: rows per task table page and the colour theme."""

    class Theme(models.TextChoices):
        SYSTEM = "system", "System (follow the browser)"
        LIGHT = "light", "Light"
        DARK = "dark", "Dark"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="console_preference")
    rows_per_page = models.PositiveSmallIntegerField(choices=ROWS_PER_PAGE_CHOICES, default=DEFAULT_ROWS_PER_PAGE)
    theme = models.CharField(max_length=8, choices=Theme.choices, default=Theme.SYSTEM)

    class Meta:
        verbose_name = "console preference"

    def __str__(self) -> str:
        return f"{self.user} ({self.rows_per_page} rows, {self.theme} theme)"

    @classmethod
    def for_user(cls, user: Any) -> ConsolePreference:
        """The saved preferences, or unsaved defaults for a user who never changed them (GET never writes)."""
        if not getattr(user, "is_authenticated", False):
            return cls()
        found = cls.objects.filter(user=user).first()
        return found if found is not None else cls(user=user)
