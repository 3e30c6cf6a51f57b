"""The peers' benchmarks: Dramatiq, Huey, Celery and RQ on the same workloads as taskq's. They run under a
separate venv (see bench/README.md), never the project's."""
