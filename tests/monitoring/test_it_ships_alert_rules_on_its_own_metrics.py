"""deploy/prometheus/codex-alerts.yml, the example alert rules: valid YAML
in Prometheus' rule-group shape, each rule on metrics /metrics exposes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.factories import make_worker_cluster

ROOT = Path(__file__).resolve().parents[2]
RULES = yaml.safe_load(
    (ROOT / "deploy" / "prometheus" / "codex-alerts.yml").read_text()
)

pytestmark = pytest.mark.django_db


def test_every_rule_names_metrics_that_a_scrape_holds(scrape):
    make_worker_cluster()  # the per-worker series exist once one beats
    exposed = {name for name, _ in scrape()}
    (group,) = RULES["groups"]
    assert group["rules"]
    for rule in group["rules"]:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}
        assert rule["alert"].startswith("Codex") and rule["annotations"]["summary"]
        for name in re.findall(r"\bcodex_[a-z_]+", str(rule["expr"])):
            samples = {name, f"{name}_bucket", f"{name}_count"}
            assert samples & exposed, f"{rule['alert']}: {name} is not exposed"
