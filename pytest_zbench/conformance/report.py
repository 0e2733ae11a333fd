"""The kit's verdicts: one CheckResult per check, printed one line each and saved as JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["pass", "fail", "n/a"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "n/a")
REPORT_SCHEMA = 1


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: Status
    detail: str
    fix: str = ""  # for a failure: what to change in the runner (docs/runner-protocol.md names the rule)
    seconds: float | None = None  # the launches made for this check (None: it judged others' launches)

    def lines(self, width: int) -> list[str]:
        first, *rest = self.detail.splitlines() or [""]
        out = [f"  {self.status:<4}  {self.name:<{width}}  {first}"]
        out += [f"  {'':<4}  {'':<{width}}  {line}" for line in rest]
        if self.status == "fail" and self.fix:
            out.append(f"  {'':<4}  {'':<{width}}  fix: {self.fix}")
        return out


@dataclass
class Report:
    device: str
    transport: str
    backend: str
    runner: list[str]
    started_utc: str
    runner_name: str = ""
    runner_version: str = ""
    results: list[CheckResult] = field(default_factory=list)
    wall_s: float = 0.0
    artifacts: str | None = None
    sizing: str = ""  # how the jobs were sized to the device (conformance/sizing.py)

    def add(self, result: CheckResult) -> None:
        self.results.append(result)

    @property
    def passed(self) -> bool:
        return not self.failed

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail"]

    def counts(self) -> dict[str, int]:
        return {status: sum(1 for r in self.results if r.status == status) for status in STATUSES}

    def summary(self) -> str:
        c = self.counts()
        verdict = "conforms" if self.passed else "does NOT conform"
        return (f"runner of device {self.device} {verdict}: {c['pass']} passed, {c['fail']} failed, "
                f"{c['n/a']} not applicable ({self.wall_s:.1f} s)")

    def lines(self) -> list[str]:
        width = max((len(r.name) for r in self.results), default=10)
        runner = f"{self.runner_name} {self.runner_version}".strip() or " ".join(self.runner)
        out = [f"zbench check-runner: device {self.device} ({self.transport}, backend {self.backend}), runner {runner}"]
        if self.sizing:
            out.append(f"  jobs sized to the device: {self.sizing}")
        for result in self.results:
            out += result.lines(width)
        out.append(self.summary())
        if self.artifacts:
            out.append(f"launch files kept in {self.artifacts}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": REPORT_SCHEMA,
            "device": self.device,
            "transport": self.transport,
            "backend": self.backend,
            "runner": {"argv": list(self.runner), "name": self.runner_name, "version": self.runner_version},
            "started_utc": self.started_utc,
            "wall_s": round(self.wall_s, 3),
            "sizing": self.sizing,
            "passed": self.passed,
            "counts": self.counts(),
            "failed": [r.name for r in self.failed],
            "checks": [asdict(r) for r in self.results],
            "artifacts": self.artifacts,
        }
