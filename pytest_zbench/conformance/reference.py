"""The reference rendering a capture is compared with: the committed software golden when the kit's job
has one at its size, else what the reference runner's software backend draws for the same job, here on the
host (it needs skia-python, a dependency of pytest-zbench)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..golden.store import GoldenError, load_png
from ..golden.tolerance import SOFTWARE
from ..protocol import Job, capture_name

RENDER_TIMEOUT_S = 300.0


class ReferenceRenderer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._rendered: dict[str, tuple[Path | None, str]] = {}

    def capture(self, job: Job, frame: int, golden: Path | None) -> tuple[np.ndarray | None, str]:
        """(pixels, where they come from) or (None, why there is no reference)."""
        if golden is not None:
            try:
                return load_png(golden), str(golden)
            except GoldenError as exc:
                return None, f"the golden {golden} cannot be read: {exc}"
        outdir, why = self._render(job)
        if outdir is None:
            return None, why
        path = outdir / capture_name(frame)
        if not path.is_file():
            return None, f"the reference runner wrote no {path.name}"
        return load_png(path), f"the reference runner's software rendering of the same job ({path})"

    def _render(self, job: Job) -> tuple[Path | None, str]:
        reference = replace(job, backend=SOFTWARE)
        key = reference.to_json()
        if key not in self._rendered:
            self._rendered[key] = self._run(reference)
        return self._rendered[key]

    def _run(self, job: Job) -> tuple[Path | None, str]:
        folder = Path(tempfile.mkdtemp(prefix=f"reference-{job.scene['id']}-", dir=self.folder))
        job_file, outdir = folder / "job.json", folder / "out"
        outdir.mkdir()
        job_file.write_text(job.to_json(), encoding="utf-8")
        try:
            done = subprocess.run([sys.executable, "-m", "pytest_zbench.runner", "run", str(job_file), str(outdir)],
                                  capture_output=True, text=True, timeout=RENDER_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return None, f"the reference runner took over {RENDER_TIMEOUT_S:.0f} s on the host"
        if done.returncode != 0:
            tail = " | ".join(done.stderr.strip().splitlines()[-3:])
            hint = " (install skia-python on the host: pip install skia-python)" \
                if "skia" in done.stderr.lower() else ""
            return None, f"the reference runner could not render the job on the host: {tail}{hint}"
        return outdir, "ok"
