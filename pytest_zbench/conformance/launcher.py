"""Launches of the device's runner for the kit, through the device's own transport.

Unlike a measured launch (host/devices/device.py) the kit needs the raw material: the job file as bytes (malformed
jobs too), frames.csv cell by cell, result.json as parsed JSON, the runner's stdout lines, and what else the
runner left in the job's folder. Layout on the device, inside the transport's workdir:

    zbench-check-<id>/<n>-<name>/job.json      the job, alone in its folder
    zbench-check-<id>/<n>-<name>/out/          OUTDIR, created empty before the launch
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..protocol import Job, capture_name
from ..transports import Transport, device_join
from ..transports.base import CommandResult

PROBE_TIMEOUT_S = 120.0


@dataclass
class RawFrames:
    """frames.csv as written: the header and each row's cells; `error` when it could not be read."""

    header: list[str] | None = None
    rows: list[list[str]] = field(default_factory=list)
    error: str | None = None
    torn_last_line: bool = False  # the file does not end with a newline: the last row may be cut

    def cells(self) -> list[dict[str, str]]:
        header = self.header or []
        return [dict(zip(header, row)) for row in self.rows]


@dataclass
class Launch:
    name: str
    job: Job | None  # None when the kit pushed a malformed job on purpose
    job_text: str
    result: CommandResult
    timeout_s: float
    local_dir: Path
    frames: RawFrames
    result_json: Any  # parsed result.json, or None
    result_error: str | None
    captures: dict[int, Path]
    stray_files: list[str]  # files the runner left beside the job (outside OUTDIR)
    job_changed: bool

    @property
    def ok(self) -> bool:
        return self.result.exit_code == 0 and not self.result.timed_out

    @property
    def stdout_lines(self) -> list[str]:
        return self.result.stdout.splitlines()

    def describe_exit(self) -> str:
        if self.result.timed_out:
            return f"was still running at its {self.timeout_s:.1f} s deadline"
        if self.result.exit_code is None:
            return "lost its connection"
        return f"exited with {self.result.exit_code}"

    def stderr_tail(self, lines: int = 4) -> str:
        kept = [line for line in self.result.stderr.strip().splitlines() if line.strip()][-lines:]
        return " | ".join(kept) if kept else "(nothing on stderr)"


def read_raw_frames(path: Path) -> RawFrames:
    if not path.is_file():
        return RawFrames(error="frames.csv was not written")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RawFrames(error=f"frames.csv is not UTF-8 ({exc})")
    text = text.removeprefix("\ufeff")
    try:
        rows = [row for row in csv.reader(io.StringIO(text, newline="")) if any(c.strip() for c in row)]
    except csv.Error as exc:
        return RawFrames(error=f"frames.csv is not CSV ({exc})")
    if not rows:
        return RawFrames(error="frames.csv is empty: no header row")
    return RawFrames(header=[h.strip() for h in rows[0]], rows=rows[1:],
                     torn_last_line=bool(text) and not text.endswith(("\n", "\r")))


class Launcher:
    """Runs the device's runner argv through an open transport; keeps every launch's files in `keep_dir`."""

    def __init__(self, transport: Transport, runner: Sequence[str], keep_dir: Path, *, transport_kind: str) -> None:
        self.transport = transport
        self.runner = list(runner)
        self.keep_dir = keep_dir
        self.transport_kind = transport_kind
        self.root = device_join(transport.workdir(), f"zbench-check-{uuid.uuid4().hex[:10]}")
        self.count = 0
        self._before = self.snapshot()
        transport.mkdir(self.root)

    def probe(self) -> CommandResult:
        return self.transport.run([*self.runner, "probe"], timeout_s=PROBE_TIMEOUT_S)

    def launch(self, name: str, job: Job | None, *, timeout_s: float, job_text: str | None = None) -> Launch:
        self.count += 1
        label = f"{self.count:02d}-{name}"
        folder = device_join(self.root, label)
        remote_job = device_join(folder, "job.json")
        outdir = device_join(folder, "out")
        local = self.keep_dir / label
        local.mkdir(parents=True, exist_ok=True)
        text = job_text if job_text is not None else job.to_json()  # type: ignore[union-attr]
        (local / "job.json").write_text(text, encoding="utf-8")
        self.transport.mkdir(outdir)
        self.transport.push(local / "job.json", remote_job)
        result = self.transport.run([*self.runner, "run", remote_job, outdir], timeout_s=timeout_s)
        out = local / "out"
        self.transport.pull_dir(outdir, out)
        with tempfile.TemporaryDirectory(prefix="zbench-check-") as tmp:
            beside = self.transport.pull_dir(folder, Path(tmp))
            names = sorted(p.name for p in beside)
            job_changed = "job.json" not in names or (Path(tmp) / "job.json").read_text(
                encoding="utf-8", errors="replace") != text
        self.transport.remove_tree(folder)
        result_json, result_error = _read_json(out / "result.json")
        captures = {}
        if job is not None:
            captures = {f: out / capture_name(f) for f in job.capture if (out / capture_name(f)).is_file()}
        (local / "stdout.txt").write_text(result.stdout, encoding="utf-8")
        (local / "stderr.txt").write_text(result.stderr, encoding="utf-8")
        return Launch(name=name, job=job, job_text=text, result=result, timeout_s=timeout_s, local_dir=local,
                      frames=read_raw_frames(out / "frames.csv"), result_json=result_json,
                      result_error=result_error, captures=captures,
                      stray_files=[n for n in names if n != "job.json"], job_changed=job_changed)

    def snapshot(self) -> set[str]:
        """Names of the regular files in the transport's workdir (and, for `local`, the current folder)."""
        names: set[str] = set()
        with tempfile.TemporaryDirectory(prefix="zbench-check-") as tmp:
            try:
                names |= {f"{self.transport.workdir()}/{p.name}"
                          for p in self.transport.pull_dir(self.transport.workdir(), Path(tmp))}
            except Exception:  # noqa: BLE001 - a workdir that cannot be listed is left out of the check
                pass
        if self.transport_kind == "local":
            cwd = os.getcwd()
            names |= {os.path.join(cwd, e.name) for e in os.scandir(cwd) if e.is_file(follow_symlinks=False)}
        return names

    def new_files(self) -> list[str]:
        """Files that appeared in the workdir (or the current folder) since the kit started, and what the
        runner left in the kit's own folder."""
        with tempfile.TemporaryDirectory(prefix="zbench-check-") as tmp:
            in_root = [f"{self.root}/{p.name}" for p in self.transport.pull_dir(self.root, Path(tmp))]
        return sorted((self.snapshot() - self._before) | set(in_root))

    def close(self) -> None:
        self.transport.remove_tree(self.root)


def _read_json(path: Path) -> tuple[Any, str | None]:
    if not path.is_file():
        return None, "result.json was not written"
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"result.json is not JSON: {exc}"


def keep_folder(path: str | Path | None) -> tuple[Path, bool]:
    """The folder launches are kept in, and whether it is a temporary one the kit must delete."""
    if path is not None:
        folder = Path(path)
        if folder.exists() and any(folder.iterdir()):
            raise UsageError(f"--keep {folder}: the folder is not empty; give a new or empty folder")
        folder.mkdir(parents=True, exist_ok=True)
        return folder, False
    return Path(tempfile.mkdtemp(prefix="zbench-check-runner-")), True
