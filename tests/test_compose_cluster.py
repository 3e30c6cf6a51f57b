"""docker-compose.cluster.yml (Docker does not run here): it parses, makes six Redis nodes one cluster of three
masters with a replica each and automatic failover, points every app service at all six through a cluster URL
taskq reads, runs two worker replicas, and names only commands and settings that exist."""

from __future__ import annotations

import dataclasses
import re
import shlex

import pytest
import yaml

from taskq.queues.engine.broker.topology import parse
from taskq.queues.engine.settings import TaskqSettings
from tests.test_compose import (
    REPO,
    assert_uses_the_postgres_service,
    manage_py_commands_exist,
    service_env,
    shell_commands,
)

COMPOSE = yaml.safe_load((REPO / "docker-compose.cluster.yml").read_text())
SERVICES = COMPOSE["services"]
NODES = [f"redis-{n}" for n in range(1, 7)]


def node_command(name: str) -> list[str]:
    (argv,) = shell_commands(SERVICES[name]["command"])
    return shlex.split(" ".join(argv[1:]).replace('"$$(hostname)"', "HOST"))  # after `exec`


@pytest.mark.parametrize("name", NODES)
def test_each_node_is_a_durable_cluster_node_with_failover(name):
    argv = node_command(name)
    assert argv[0] == "redis-server"
    options = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert options["--cluster-enabled"] == "yes" and int(options["--cluster-node-timeout"]) <= 15_000
    assert options["--appendonly"] == "yes" and options["--cluster-preferred-endpoint-type"] == "hostname"
    assert SERVICES[name]["healthcheck"]["test"] and SERVICES[name]["volumes"][0].split(":")[0] in COMPOSE["volumes"]


def test_the_init_service_makes_three_masters_with_a_replica_each():
    *_check, argv = shell_commands(SERVICES["redis-cluster-init"]["command"])  # unless the cluster exists
    assert argv[:3] == ["redis-cli", "--cluster", "create"]
    assert [a.split(":")[0] for a in argv[3:9]] == NODES
    assert argv[argv.index("--cluster-replicas") + 1] == "1" and "--cluster-yes" in argv
    assert set(SERVICES["redis-cluster-init"]["depends_on"]) == set(NODES)


@pytest.mark.parametrize("name", ["console", "worker"])
def test_app_services_use_the_cluster_and_commands_that_exist(name):
    env = service_env(SERVICES[name])
    topology = parse(env["REDIS_URL"])
    assert topology.kind == "cluster" and [host for host, _port in topology.nodes] == NODES
    assert SERVICES[name]["depends_on"]["redis-cluster-init"]["condition"] == "service_completed_successfully"
    for argv in shell_commands(SERVICES[name]["command"]):
        if argv[:2] == ["python", "manage.py"]:
            assert manage_py_commands_exist(argv[2]), argv
        else:
            assert argv[0] == "daphne" and argv[-1] == "taskq.console.asgi:application", argv
    settings_source = (REPO / "console" / "settings.py").read_text()
    taskq = {f.metadata["name"] for f in dataclasses.fields(TaskqSettings)}
    assert not [var for var in env if f'"{var}"' not in settings_source and var not in taskq]


@pytest.mark.parametrize("name", ["console", "worker"])
def test_app_services_keep_the_django_side_in_postgresql(name, monkeypatch):
    assert_uses_the_postgres_service(SERVICES, name, monkeypatch)


def test_two_worker_replicas_each_one_process_per_cpu():
    worker = SERVICES["worker"]
    assert worker["deploy"]["replicas"] == 2
    assert re.search(r"--processes auto", " ".join(worker["command"]))
