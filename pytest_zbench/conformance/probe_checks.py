"""probe.*: `RUNNER probe` prints one JSON object valid against probe.schema.json, speaks protocol 1 and
lists the device's backend."""

from __future__ import annotations

import json
from typing import Any

from ..protocol import PROTOCOL_VERSION
from ..schema import violations
from .context import Context, listing, result
from .report import CheckResult

SCHEMA_FIX = "print one JSON object matching pytest_zbench/schema/probe.schema.json (docs/runner-protocol.md, probe)"


def one_object(stdout: str) -> tuple[Any, str | None]:
    """The probe's JSON object (log lines around it are allowed), or why there is none."""
    text = stdout.strip()
    try:
        return json.loads(text), None
    except json.JSONDecodeError:
        pass
    objects = []
    for line in text.splitlines():
        if line.strip().startswith("{"):
            try:
                objects.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    if len(objects) != 1:
        return None, f"expected one JSON object on stdout, found {len(objects)}: {text[:160]!r}"
    return objects[0], None


def run_probe(ctx: Context) -> list[CheckResult]:
    done = ctx.launcher.probe()
    if not done.ok:
        why = "timed out" if done.timed_out else f"exited with {done.exit_code}"
        tail = " | ".join(done.stderr.strip().splitlines()[-3:]) or "(nothing on stderr)"
        return [result("probe.protocol", "n/a", "not judged: no probe output"),
                result("probe.schema", "fail", f"`{' '.join(ctx.launcher.runner)} probe` {why}: {tail}",
                       "`RUNNER probe` must print its capabilities and exit 0")]
    raw, problem = one_object(done.stdout)
    if problem is not None or not isinstance(raw, dict):
        problem = problem or f"the probe printed {type(raw).__name__}, not a JSON object"
        return [result("probe.protocol", "n/a", "not judged: no probe object"),
                result("probe.schema", "fail", problem, SCHEMA_FIX)]
    ctx.probe_raw = raw
    out = []
    version = raw.get("protocol")
    if isinstance(version, int) and not isinstance(version, bool) and version == PROTOCOL_VERSION:
        out.append(result("probe.protocol", "pass", f"protocol {PROTOCOL_VERSION}"))
    else:
        out.append(result("probe.protocol", "fail", f"the probe says protocol {version!r}; this host speaks "
                                                     f"{PROTOCOL_VERSION}", f'print "protocol": {PROTOCOL_VERSION}'))
    found = [v for v in violations("probe", raw) if v.path[:1] != ("protocol",)]
    if found:
        out.append(result("probe.schema", "fail", listing([str(v) for v in found]), SCHEMA_FIX))
    else:
        build = raw.get("build")
        # The build is optional; the report says which build the host will record (docs/native-runner.md).
        said = (f"; engine build {build['id']}" if isinstance(build, dict) else
                "; no engine build reported (key build): sessions record ZBENCH_BUILD_HASH or the harness "
                "checkout's commit as the build")
        out.append(result("probe.schema", "pass", "one JSON object, valid against probe.schema.json" + said))
    return out


def check_backend(ctx: Context) -> CheckResult:
    raw = ctx.probe_raw
    if raw is None:
        return result("probe.backend", "n/a", "not judged: no probe object")
    backends: dict[str, Any] = raw["backends"] if isinstance(raw.get("backends"), dict) else {}
    entry = backends.get(ctx.backend)
    if not isinstance(entry, dict) or not isinstance(entry.get("features"), list):
        listed = ", ".join(sorted(map(str, backends))) or "none"
        return result("probe.backend", "fail",
                      f"the probe lists backends {listed}, not {ctx.backend!r} (the device's backend in "
                      f"{ctx.spec.source})",
                      f"list backend {ctx.backend!r} with its features, or set the device's `backend` to one the "
                      f"runner has")
    ctx.features = frozenset(f for f in entry["features"] if isinstance(f, str))
    timers = entry.get("timer_sources", ["none"])
    ctx.timer_sources = tuple(t for t in timers if isinstance(t, str)) if isinstance(timers, list) else ()
    return result("probe.backend", "pass", f"backend {ctx.backend}: features {', '.join(sorted(ctx.features))}; "
                                           f"timer sources {', '.join(ctx.timer_sources) or 'none'}")
