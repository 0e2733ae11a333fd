"""How far the Qt 6 runner's pixels are from the reference runner's (docs/goldens.md, "Qt 6 against the
reference"): every committed golden of the Qt devices (goldens/raster/qt-raster, goldens/gles2/qt-llvmpipe)
against the reference software golden of the same scene and frame (goldens/software/x86_64), with the golden
metrics (pytest_zbench/golden/match.py: max delta, pixels over it, edge pixels over, FLIP mean) under the
scene's cross-backend tolerance for that backend, summed up per scene family as a Markdown table.

    python bench/qt_cross_backend.py [--frames] [--no-flip] [--device local-qt-raster]

A measurement of committed images, not a test: the goldens are recorded with
`pytest --zbench-device=local-qt-raster --zbench-goldens-only --zbench-update-goldens=missing` (and
local-qt-gles2).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Any

from pytest_zbench.golden.match import compare
from pytest_zbench.golden.store import load_png
from pytest_zbench.golden.tolerance import resolve_tolerance
from pytest_zbench.scenes import load_corpus

REPO = Path(__file__).resolve().parents[1]
SETS = {"local-qt-raster": ("raster", "qt-raster"), "local-qt-gles2": ("gles2", "qt-llvmpipe")}
REFERENCE = REPO / "goldens" / "software" / "x86_64"


def measure(backend: str, device_class: str, flip: bool = True) -> list[dict[str, Any]]:
    cases = {c.id: c for c in load_corpus(REPO / "scenes")[0]}
    rows = []
    for case_id, case in sorted(cases.items()):
        for frame in case.capture:
            own = REPO / "goldens" / backend / device_class / case_id / f"frame-{frame}.png"
            ref = REFERENCE / case_id / f"frame-{frame}.png"
            if not own.is_file() or not ref.is_file():
                continue
            tol = resolve_tolerance(case.tolerance, backend, golden_backend="software")
            result = compare(load_png(ref), load_png(own), tol, perceptual=flip)
            m = result.metrics
            rows.append({"family": case.family, "scene": case_id, "frame": frame, "passed": result.passed,
                         "max_delta": m.get("max_delta", 0), "pixels_over": m.get("pixels_over", 0),
                         "edge_over": m.get("edge_pixels_over", 0), "flip_mean": m.get("flip_mean"),
                         "failures": [f[0] for f in result.failures]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", action="store_true", help="one row per frame")
    parser.add_argument("--no-flip", action="store_true", help="leave FLIP out (seconds per frame on a CPU)")
    parser.add_argument("--device", choices=sorted(SETS), help="one device only")
    args = parser.parse_args()
    for device, (backend, device_class) in SETS.items():
        if args.device and device != args.device:
            continue
        rows = measure(backend, device_class, flip=not args.no_flip)
        print(f"\n{device} (goldens/{backend}/{device_class}) against goldens/software/x86_64: {len(rows)} frames, "
              f"{sum(r['passed'] for r in rows)} within the scenes' {backend} cross_backend tolerance\n")
        print("| family | frames | max delta | pixels over delta | edge pixels over | FLIP mean (max) | within tolerance |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            groups[f"{r['scene']} [{r['frame']}]" if args.frames else r["family"]].append(r)
        for name, group in groups.items():
            flips = [r["flip_mean"] for r in group if r["flip_mean"] is not None]
            failed = sorted({f for r in group for f in r["failures"]})
            within = f"{sum(r['passed'] for r in group)}/{len(group)}" + (f" ({', '.join(failed)})" if failed else "")
            flip = f"{max(flips):.4f}" if flips else "n/a"
            print(f"| {name} | {len(group)} | {max(r['max_delta'] for r in group)} | "
                  f"{max(r['pixels_over'] for r in group)} | {max(r['edge_over'] for r in group)} | {flip} | {within} |")


if __name__ == "__main__":
    main()
