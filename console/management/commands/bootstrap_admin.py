"""Create the console's first superuser so a fresh install can log in.

Prints the password once, because nothing else stores it in clear text. ADMIN_PASSWORD fixes the password
(for scripted installs); otherwise a random one is generated.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

USERNAME = "admin"


class Command(BaseCommand):
    help = "Create the 'admin' superuser if missing and print its password; --reset sets a new password."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset", action="store_true", help="If 'admin' already exists, set a new password and print it."
        )

    def handle(self, *args: Any, reset: bool = False, **options: Any) -> None:
        user_model = get_user_model()
        password = os.environ.get("ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        user = user_model._default_manager.filter(**{user_model.USERNAME_FIELD: USERNAME}).first()

        if user is None:
            user_model._default_manager.create_superuser(USERNAME, email="", password=password)
            self.stdout.write(f"created superuser {USERNAME}")
        elif reset:
            user.set_password(password)
            # A reset is how an operator gets back in, so also undo a deactivation.
            user.is_active = True
            user.save(update_fields=["password", "is_active"])
            self.stdout.write(f"reset password of {USERNAME}")
        else:
            self.stdout.write(f"superuser {USERNAME} already exists (use --reset to set a new password)")
            return
        self.stdout.write(f"{USERNAME} password: {password}")
