"""metrics/prometheus/alerts.yml: valid Prometheus rule files, alerts only on series our exporters really serve,
wired into prometheus.yml, and (with promtool, which scripts/ensure-promtool.sh installs) passing promtool's own
checks and the rule unit tests in alerts.test.yml."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from metrics_support import exported_names

REPO = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = REPO / "metrics/prometheus"
RULES_FILE = PROMETHEUS_DIR / "alerts.yml"
RULES = yaml.safe_load(RULES_FILE.read_text())
ALERTS = [rule for group in RULES["groups"] for rule in group["rules"]]

# -- PromQL metric identifiers --------------------------------------------------------------------------------------

#: Words of PromQL that look like identifiers but name no metric.
KEYWORDS = {
    "and",
    "or",
    "unless",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "inf",
    "nan",
}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
# Not after a digit or dot, so the "m" of 5m and the "e3" of 1e3 are no names.
_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_:.])[A-Za-z_:][A-Za-z0-9_:]*")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers outside strings, label matchers, ranges and label
    lists, that are neither a function or aggregation (followed by a parenthesis) nor a keyword."""
    text = _LABEL_LISTS.sub(" ", _RANGES.sub(" ", _MATCHERS.sub(" ", _STRING.sub('""', expr))))
    names = set()
    for match in _IDENTIFIER.finditer(text):
        name, rest = match.group(), text[match.end() :].lstrip()
        if rest.startswith("(") or name.lower() in KEYWORDS:
            continue
        names.add(name)
    return names


def test_metric_names_parser():
    expr = (
        'sum by (queue, state) (rate(taskq_a_total{queue=~"x|taskq_fake", state!="b"}[5m] offset 1h)) '
        "/ on(queue) group_left(type) (taskq_b > 0) and ignoring(x) taskq:c:rate5m * 1e3 unless Inf"
        " or histogram_quantile(0.9, sum without (le) (taskq_d_bucket))"
    )
    assert metric_names(expr) == {"taskq_a_total", "taskq_b", "taskq:c:rate5m", "taskq_d_bucket"}


# -- the rule file ------------------------------------------------------------------------------------------------

DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
RULE_KEYS = {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}


def test_rule_file_has_the_prometheus_shape():
    assert set(RULES) == {"groups"}
    names = [group["name"] for group in RULES["groups"]]
    assert len(names) == len(set(names)), "group names must be unique"
    for group in RULES["groups"]:
        assert set(group) <= {"name", "interval", "limit", "rules"} and group["rules"]
        for rule in group["rules"]:
            assert set(rule) <= RULE_KEYS, f"unknown keys in {rule.get('alert')}: {set(rule) - RULE_KEYS}"
            assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", rule["alert"])
            assert isinstance(rule["expr"], str) and rule["expr"].strip()
            assert DURATION.match(rule.get("for", "0s"))
            assert rule["labels"]["severity"] in ("warning", "critical")
            assert {"summary", "description"} <= set(rule["annotations"])
    alerts = [rule["alert"] for rule in ALERTS]
    assert len(alerts) == len(set(alerts)), "alert names must be unique"


def test_the_issue_s_alerts_are_there():
    assert {rule["alert"] for rule in ALERTS} == {
        "TaskqQueueLatencyHigh",
        "TaskqErrorRateHigh",
        "TaskqNoWorkers",
        "TaskqArchiveGrowing",
        "TaskqRedisMemoryNearLimit",
        "TaskqLeasesLost",
        "TaskqQueueUnserved",
    }


def test_prometheus_loads_the_rules():
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"]  # relative to prometheus.yml, so mounted along with it


@pytest.mark.django_db
def test_every_alert_uses_only_series_we_export(client, engine):
    served = exported_names(client, engine)
    for rule in ALERTS:
        used = metric_names(rule["expr"])
        assert used, f"{rule['alert']} selects no metric"
        assert used <= served, f"{rule['alert']} uses {used - served}, which no exporter of ours serves"


# -- promtool -----------------------------------------------------------------------------------------------------


def promtool(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("promtool is missing: run scripts/ensure-promtool.sh (make test does)")
    return subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_promtool_checks_the_config_and_its_rules(tmp_path):
    done = promtool("check", "config", "prometheus.yml", cwd=config_with_token_file(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 7 rules found" in done.stdout + done.stderr


def config_with_token_file(folder: Path) -> Path:
    """A copy of the Prometheus folder whose token file exists: promtool checks that it does, and in the stack it
    is docker-compose's secret (/run/secrets/…), which only a container has."""
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    [console] = [job for job in config["scrape_configs"] if job["job_name"] == "taskq-console"]
    assert console["authorization"]["credentials_file"] == "/run/secrets/metrics_token"
    (folder / "metrics_token").write_text("token-of-the-test\n")
    console["authorization"]["credentials_file"] = str(folder / "metrics_token")
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    shutil.copy(RULES_FILE, folder / RULES_FILE.name)
    return folder


def test_promtool_rule_unit_tests_pass():
    done = promtool("test", "rules", "tests/metrics/alerts.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr
