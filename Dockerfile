# One image for the console (daphne) and the worker; docker-compose.yml picks the command.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Spark tasks run in the worker through PySpark, which needs a JVM (default-jre-headless is 17+ on current Debian).
RUN apt-get update \
    && apt-get install -y --no-install-recommends default-jre-headless \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first so code changes do not reinstall them. Explicit COPYs (not `COPY . .`) keep a local
# .venv, db.sqlite3 and caches out of the image.
COPY pyproject.toml ./
COPY constraints ./constraints
# taskq/ links the app folders below (taskq/queues -> ../queues...): the one import name, taskq.
COPY taskq ./taskq
COPY console ./console
COPY queues ./queues
COPY worker ./worker
COPY metrics ./metrics
# Every extra (Spark tasks and the pipeline, the RQ bridge, PostgreSQL's driver, the django-tasks backport), at the
# exact versions CI tests (constraints/newest.txt).
RUN pip install -c constraints/newest.txt '.[all]' && pip check

COPY manage.py ./
COPY templates ./templates
COPY static ./static
# Pre-compressed static files for WhiteNoise; the console also works without this step.
RUN python manage.py collectstatic --noinput

RUN useradd --create-home --uid 1000 taskq
USER taskq

EXPOSE 8000
# A listen backlog of 1024, not daphne's 50: hundreds of API consumers long-polling at once would otherwise be reset
# before daphne accepts them (docs/http-api.md).
CMD ["daphne", "-e", "tcp:8000:interface=0.0.0.0:backlog=1024", "taskq.console.asgi:application"]
