"""The workflow and the scripts it calls agree: every matrix field and step output the workflow reads is one
that `zbench matrix` and the leg write, and the leg job keeps the device-lab rules (ci/test.sh also runs
actionlint and the GitHub workflow JSON Schema on it)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from pytest_zbench.inventory import load_inventory
from pytest_zbench.lab.matrix import leg_of

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "zbench.yml"
LEG_OUTPUTS = {"artifact", "results", "junit", "run-json", "summary", "mode", "exit-code", "scenes", "regressed",
               "perf-failed", "golden-failed", "inconclusive"}


def load() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_the_workflow_reads_only_what_the_matrix_and_the_leg_write():
    text = WORKFLOW.read_text(encoding="utf-8")
    leg = leg_of(load_inventory(REPO / "devices.yaml").get("local")).to_json()
    assert set(re.findall(r"matrix\.([a-z_]+)", text)) <= set(leg)
    assert set(re.findall(r"steps\.leg\.outputs\.([a-z-]+)", text)) <= LEG_OUTPUTS
    assert set(re.findall(r"needs\.plan\.outputs\.([a-z]+)", text)) == {"matrix", "legs"}
    leg_source = (REPO / "pytest_zbench" / "lab" / "leg.py").read_text(encoding="utf-8")
    for name in LEG_OUTPUTS:
        assert f'"{name}"' in leg_source, name


def test_the_device_job_follows_the_lab_rules():
    workflow = load()
    assert set(workflow[True]) == {"push", "pull_request", "schedule", "workflow_dispatch"}  # YAML reads `on` as True
    job = workflow["jobs"]["device"]
    assert job["runs-on"] == "${{ matrix.labels }}"
    assert job["timeout-minutes"] == "${{ matrix.timeout_minutes }}"
    # A device's jobs queue behind each other, none cancelled; a hosted leg's group is its own run's.
    assert job["concurrency"]["cancel-in-progress"] is False
    assert job["concurrency"]["group"] == ("${{ matrix.hosted && format('zbench-hosted-{0}-{1}', matrix.device, "
                                           "github.run_id) || format('zbench-device-{0}', matrix.device) }}")
    assert job["strategy"]["fail-fast"] is False
    assert job["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    steps = {step.get("uses", step.get("run", "")).split("@")[0]: step for step in job["steps"]}
    assert steps["bash ci/zbench-leg.sh"]["id"] == "leg"
    upload = steps["actions/upload-artifact"]
    assert upload["with"]["name"] == "${{ steps.leg.outputs.artifact }}" and upload["if"].startswith("always()")
    junit = steps["EnricoMi/publish-unit-test-result-action/linux"]  # the variant without Docker
    assert junit["with"]["check_name"] == "${{ matrix.check_name }}" and junit["if"].startswith("always()")
    # Secrets reach the leg through the environment only.
    assert "secrets." not in str(steps["bash ci/zbench-leg.sh"].get("run"))
    assert steps["bash ci/zbench-leg.sh"]["env"]["ZBENCH_HISTORY_URL"] == "${{ secrets.ZBENCH_HISTORY_URL }}"
    assert steps["bash ci/zbench-leg.sh"]["env"]["PGPASSWORD"] == "${{ secrets.ZBENCH_DB_PASSWORD }}"
