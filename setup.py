"""Only what pyproject.toml cannot say: the console's templates and static files live at the repository root
(``templates/``, ``static/``: Django's DIRS and STATICFILES_DIRS in a checkout), and a wheel must carry them inside the
console app (``taskq/console/templates``, ``taskq/console/static``), where an installed project's APP_DIRS template
loader and AppDirectoriesFinder find them.
"""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_py import build_py

#: (directory in the checkout, where it goes in the installed packages)
CONSOLE_ASSETS = [("templates", "taskq/console/templates"), ("static", "taskq/console/static")]


class BuildPyWithConsoleAssets(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs from the checkout, where settings point at the root folders
        for source, target in CONSOLE_ASSETS:
            # Absent only where a build copies the packages alone (the Dockerfile's dependency layer, which
            # serves the root folders from /app).
            if os.path.isdir(source):
                self.copy_tree(source, os.path.join(self.build_lib, target))


setup(cmdclass={"build_py": BuildPyWithConsoleAssets})
