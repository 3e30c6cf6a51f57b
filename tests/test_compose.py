"""docker-compose.yml must only refer to things that exist: management commands, the ASGI module, and
environment variables that settings.py actually reads (a variable nobody reads is a silent misconfiguration); and
its console and workers keep the Django side in the stack's PostgreSQL, as a real deployment does."""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from django.core.management import get_commands

from taskq.queues.engine.settings import TaskqSettings

REPO = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
APP_SERVICES = ["console", "worker"]


def shell_commands(command: str | list[str]) -> list[list[str]]:
    """Split a service command into simple commands, looking inside `sh -c "a && b"`."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if len(argv) >= 3 and argv[0] in ("sh", "bash") and argv[1] == "-c":
        return [shlex.split(part) for part in re.split(r"&&|;|\|\|", argv[2]) if part.strip()]
    return [argv]


def service_env(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # the ["NAME=value", ...] form
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return env


def manage_py_commands_exist(name: str) -> bool:
    # Our own commands must be files under <app>/management/commands/; Django's built-ins come from get_commands.
    return any(REPO.glob(f"*/management/commands/{name}.py")) or name in get_commands()


def test_expected_services():
    assert {"redis", "postgres", "console", "worker"} <= set(SERVICES)


def waits_for(services: dict, name: str, target: str) -> bool:
    """Whether service ``name`` starts only once ``target`` is healthy, itself or through what it waits for."""
    depends_on = services[name].get("depends_on") or {}
    if depends_on.get(target, {}).get("condition") == "service_healthy":
        return True
    return any(waits_for(services, other, target) for other in depends_on)


def assert_uses_the_postgres_service(services: dict, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An app service keeps the Django side in the stack's PostgreSQL: its DATABASE_URL, read as console/settings.py
    reads it, names the postgres service with the user, password and database that service creates, and the service
    starts once that database is healthy."""
    from taskq.console.env import env_database

    monkeypatch.setenv("DATABASE_URL", service_env(services[name])["DATABASE_URL"])
    database = env_database("DATABASE_URL", "sqlite://")
    postgres = services["postgres"]
    created = service_env(postgres)
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["HOST"], database["PORT"]) == ("postgres", 5432)
    assert (database["USER"], database["PASSWORD"], database["NAME"]) == (
        created["POSTGRES_USER"],
        created["POSTGRES_PASSWORD"],
        created["POSTGRES_DB"],
    )
    assert f"-U {created['POSTGRES_USER']} -d {created['POSTGRES_DB']}" in " ".join(postgres["healthcheck"]["test"])
    assert waits_for(services, name, "postgres"), f"{name} may start before the database answers"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_keep_the_django_side_in_postgresql(name, monkeypatch):
    assert_uses_the_postgres_service(SERVICES, name, monkeypatch)


def test_the_image_has_the_postgresql_driver():
    """The Dockerfile installs the project with the postgres extra (through ``all``), at CI's exact versions:
    DATABASE_URL's postgres:// needs psycopg in the image, not only on a developer's machine."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert any(re.match(r"psycopg\[binary\]>=", spec) for spec in extras["postgres"])
    assert any("postgres" in spec for spec in extras["all"])
    assert any(re.match(r"dj-database-url>=", spec) for spec in project["dependencies"])
    installs = re.findall(
        r"^RUN pip install -c constraints/newest\.txt '\.\[([a-z,-]+)\]'(?: && pip check)?$",
        (REPO / "Dockerfile").read_text(),
        re.MULTILINE,
    )
    assert installs and {"all", "postgres"} & set(installs[0].split(","))


@pytest.mark.parametrize("name", ["redis", "postgres"])
def test_backing_services_have_healthchecks_and_volumes(name):
    service = SERVICES[name]
    assert service.get("healthcheck", {}).get("test"), f"{name} needs a healthcheck"
    volumes = service.get("volumes") or []
    assert volumes and all(v.split(":", 1)[0] in COMPOSE.get("volumes", {}) for v in volumes), (
        f"{name} must keep its data in a named volume"
    )


def test_redis_is_durable():
    command = " ".join(shell_commands(SERVICES["redis"]["command"])[0])
    assert "--appendonly yes" in command
    assert "--appendfsync everysec" in command


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_build_this_repo_and_wait_for_healthy_redis(name):
    service = SERVICES[name]
    assert service.get("build") in (".", {"context": "."})
    assert service["depends_on"]["redis"]["condition"] == "service_healthy"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_commands_refer_to_things_that_exist(name):
    commands = shell_commands(SERVICES[name]["command"])
    assert commands
    for argv in commands:
        if argv[:2] == ["python", "manage.py"]:
            assert manage_py_commands_exist(argv[2]), f"{name}: manage.py has no command {argv[2]!r}"
        elif argv[0] == "daphne":
            target = argv[-1]
            module_name, _, attr = target.partition(":")
            module = importlib.import_module(module_name)
            assert callable(getattr(module, attr or "application", None)), f"{name}: {target} is not an app"
        else:
            pytest.fail(f"{name}: unexpected command {argv!r}; teach this test what it refers to")


@pytest.mark.parametrize("name", APP_SERVICES)
def test_every_environment_variable_is_read_by_settings(name):
    # Django's own variables are read in console/settings.py; taskq's are the fields of TaskqSettings.
    settings_source = (REPO / "console" / "settings.py").read_text()
    taskq = {f.metadata["name"] for f in dataclasses.fields(TaskqSettings)}
    env = service_env(SERVICES[name])
    assert env, f"{name} sets no environment"
    unread = [var for var in env if f'"{var}"' not in settings_source and var not in taskq]
    assert not unread, f"{name} sets {unread} but console/settings.py never reads them"


def test_dockerfile_uses_python_311():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim", dockerfile, re.MULTILINE)


def test_prometheus_and_grafana_are_provisioned_from_the_repo():
    mounts = {
        v.split(":")[0]: v.split(":")[1]
        for name in ("prometheus", "grafana")
        for v in SERVICES[name]["volumes"]
        if v.startswith("./")
    }
    for source in mounts:
        assert (REPO / source).exists(), f"{source} is mounted but missing"
    config = yaml.safe_load((REPO / "metrics/prometheus/prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["taskq-console"]["static_configs"][0]["targets"] == ["console:8000"]
    worker_port = shell_commands(SERVICES["worker"]["command"])[0]
    assert jobs["taskq-workers"]["dns_sd_configs"][0]["port"] == int(
        worker_port[worker_port.index("--metrics-port") + 1]
    )
    dashboard = json.loads((REPO / "metrics/grafana/dashboards/taskq.json").read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    for metric in (
        "taskq_queue_size",
        "taskq_queue_latency_seconds",
        "taskq_tasks_processed_total",
        "taskq_tasks_failed_total",
        "taskq_task_runtime_seconds_bucket",
        "taskq_servers",
    ):
        assert metric in exprs, f"the dashboard does not chart {metric}"


SPARK_SERVICES = ["spark-master", "spark-worker", "spark-connect"]


@pytest.mark.parametrize("name", SPARK_SERVICES)
def test_spark_services_run_daemons_that_exist(name):
    from taskq.worker import spark_daemons

    service = SERVICES[name]
    assert service.get("build") in (".", {"context": "."}) and service.get("healthcheck", {}).get("test")
    (argv,) = shell_commands(service["command"])
    assert argv[:3] == ["python", "-m", "taskq.worker.spark_daemons"], f"{name}: unexpected command {argv!r}"
    args = spark_daemons.parser().parse_args(argv[3:])
    launched = spark_daemons.argv_for(args)
    assert Path(launched[0]).is_file(), f"{name}: {launched[0]} is not in the pyspark wheel"
    if args.daemon == "connect":
        assert any(Path(spark_daemons.spark_home(), "jars").glob("spark-connect_*.jar"))
    else:
        assert launched[1].startswith("org.apache.spark.deploy.")


def test_worker_points_at_the_spark_service_and_shares_the_archive():
    env = service_env(SERVICES["worker"])
    assert env["SPARK_MASTER"] == "${SPARK_MASTER:-spark://spark-master:7077}"
    assert env["TASKS_EVENT_EXPORT_DIR"].startswith("/data/")
    for name in ("worker", "spark-worker"):
        assert any(v.startswith("pipeline-data:/data") for v in SERVICES[name]["volumes"])


@pytest.mark.parametrize("name", ["prometheus", "grafana", "worker", "console"])
def test_services_have_healthchecks(name):
    assert SERVICES[name].get("healthcheck", {}).get("test")


def served_port(name: str) -> int:
    """The port the app service's own command serves its health check on."""
    argv = shell_commands(SERVICES[name]["command"])[-1]
    if name == "worker":
        return int(argv[argv.index("--health-port") + 1])
    # daphne listens on a Twisted endpoint (``-e tcp:PORT:interface=...:backlog=...``) for its larger backlog.
    endpoint = argv[argv.index("-e") + 1].split(":")
    assert endpoint[0] == "tcp", f"{name}: teach this test the endpoint {endpoint!r}"
    return int(endpoint[1])


def health_url(name: str) -> tuple[int, str]:
    """(port, path) of the URL an app service's `python -c "...urlopen('http://127.0.0.1:PORT/PATH')"` probes."""
    test = SERVICES[name]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"], f"{name}: teach this test the healthcheck {test!r}"
    match = re.search(r"urlopen\('http://127\.0\.0\.1:(\d+)(/[^']*)'", test[3])
    assert match, f"{name}: the healthcheck probes no local URL: {test[3]!r}"
    return int(match.group(1)), match.group(2)


def test_console_healthcheck_probes_its_healthz():
    from django.urls import resolve

    from taskq.console.views import healthz

    port, path = health_url("console")
    assert port == served_port("console")
    assert resolve(path).func is healthz


def test_worker_healthcheck_probes_its_health_port():
    from taskq.worker.health import PATHS

    port, path = health_url("worker")
    assert port == served_port("worker")
    assert path in PATHS
    argv = shell_commands(SERVICES["worker"]["command"])[0]
    assert port != int(argv[argv.index("--metrics-port") + 1]), "the health and metrics ports must differ"


def test_tasks_health_named_in_the_compose_file_parses():
    # The compose file offers `tasks health` where the port cannot be reached; it must stay a valid command line.
    from taskq.queues.cli.main import build_parser

    (line,) = [line for line in (REPO / "docker-compose.yml").read_text().splitlines() if "tasks health" in line]
    argv = shlex.split(line[line.index("`") + 1 : line.rindex("`")])
    assert argv[:3] == ["python", "manage.py", "tasks"]
    args = build_parser().parse_args(argv[3:])
    assert args.command_name == "health" and args.max_age == 30


def test_prometheus_loads_alert_rules_from_the_mounted_folder():
    config = yaml.safe_load((REPO / "metrics/prometheus/prometheus.yml").read_text())
    mounted = {v.split(":")[1]: REPO / v.split(":")[0] for v in SERVICES["prometheus"]["volumes"] if v.startswith("./")}
    config_path = next(
        arg.split("=", 1)[1] for arg in SERVICES["prometheus"]["command"] if arg.startswith("--config.file=")
    )
    folder = str(Path(config_path).parent)
    assert folder in mounted, "prometheus.yml must come from the repo"
    assert config["rule_files"], "no alert rules loaded"
    for rule_file in config["rule_files"]:
        assert (mounted[folder] / rule_file).is_file(), f"{rule_file} is not in {mounted[folder]}"


def test_prometheus_scrapes_the_console_with_its_metrics_token():
    """With DEBUG off /metrics refuses scrapes from other hosts unless they send METRICS_TOKEN: the console takes it
    from the environment, Prometheus from the secret made of the same variable."""
    assert "METRICS_TOKEN" in service_env(SERVICES["console"])
    assert COMPOSE["secrets"]["metrics_token"] == {"environment": "METRICS_TOKEN"}
    assert "metrics_token" in SERVICES["prometheus"]["secrets"]
    config = yaml.safe_load((REPO / "metrics/prometheus/prometheus.yml").read_text())
    [console] = [job for job in config["scrape_configs"] if job["job_name"] == "taskq-console"]
    assert console["authorization"] == {"type": "Bearer", "credentials_file": "/run/secrets/metrics_token"}
