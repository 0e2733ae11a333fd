"""The runner conformance kit (`zbench check-runner`, docs/runner-protocol.md): launches a device's runner
through the device's own transport with small jobs and judges every rule of runner protocol 1, one named
check per rule: pass, fail (with what to fix) or n/a."""

from __future__ import annotations

from .kit import ORDER, check_runner, parse_features
from .report import CheckResult, Report

__all__ = ["ORDER", "CheckResult", "Report", "check_runner", "parse_features"]
