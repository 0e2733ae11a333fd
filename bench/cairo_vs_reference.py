"""How far the Cairo runner's pixels are from the reference runner's, per scene family (docs/goldens.md, "Cairo"):
every Cairo golden (goldens/cairo/<set>/) against the reference software golden of the same scene and frame
(goldens/software/x86_64/), with the suite's own metrics (pytest_zbench/golden/match.py) under the tolerance the
golden test uses for that scene (its `cairo.cross_backend` over the cross-backend defaults). Prints, per family,
the largest channel difference, the most pixels over the bound's max_delta, edge pixels over it, the worst FLIP
mean, and whether every frame passes.

    python bench/cairo_vs_reference.py [--set cairo-pixman-x86_64]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from pytest_zbench.golden.match import compare
from pytest_zbench.golden.store import load_png
from pytest_zbench.golden.tolerance import resolve_tolerance
from pytest_zbench.scenes import load_corpus

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="cairo-pixman-x86_64")
    args = parser.parse_args()
    cases = {c.id: c for c in load_corpus(REPO / "scenes")[0]}
    own = REPO / "goldens" / "cairo" / args.set
    rows: dict[str, list[tuple[str, dict, bool]]] = defaultdict(list)
    for frame_png in sorted(own.glob("*/frame-*.png")):
        scene = frame_png.parent.name
        reference = REPO / "goldens" / "software" / "x86_64" / scene / frame_png.name
        if scene not in cases or not reference.is_file():
            continue
        case = cases[scene]
        tol = resolve_tolerance(case.tolerance, "cairo", golden_backend="software")
        result = compare(load_png(reference), load_png(frame_png), tol)
        rows[case.family].append((f"{scene}/{frame_png.stem}", result.metrics, result.passed))
    print(f"{'family':<12} {'frames':>6} {'max delta':>9} {'px over':>8} {'edge over':>9} {'FLIP mean':>9}  verdict")
    for family, frames in sorted(rows.items()):
        worst = max(frames, key=lambda r: r[1].get("pixels_over", 0))
        print(f"{family:<12} {len(frames):>6} {max(m.get('max_delta', 0) for _, m, _ in frames):>9} "
              f"{max(m.get('pixels_over', 0) for _, m, _ in frames):>8} "
              f"{max(m.get('edge_pixels_over', 0) or 0 for _, m, _ in frames):>9} "
              f"{max(m.get('flip_mean') or 0.0 for _, m, _ in frames):>9.4f}  "
              f"{'pass' if all(p for *_, p in frames) else 'FAIL: ' + ', '.join(n for n, _, p in frames if not p)}"
              f"  (most pixels over: {worst[0]})")


if __name__ == "__main__":
    main()
