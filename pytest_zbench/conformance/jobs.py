"""The kit's jobs: its own small scenes (scenes.yaml beside this module), and per feature the scene of the
project's corpus that isolates it best, rendered at the size of its software golden when there is one."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..golden.store import REFERENCE_ARCH, GoldenStore
from ..golden.tolerance import SOFTWARE
from ..protocol import Job
from ..protocol.display_list import FEATURES as OP_NAMES
from ..scenes import SceneCase, load_corpus, load_scene_file

# Every op of the display list (docs/display-list.md) is a feature the kit can check.
FEATURES: tuple[str, ...] = tuple(sorted(OP_NAMES))
# The kit's own jobs are small: the kit launches the runner about 25 times.
KIT_SURFACE = (128, 80)
UNKNOWN_OP = "zbench_check_unknown_op"


@lru_cache(maxsize=1)
def kit_scenes() -> dict[str, SceneCase]:
    with resources.as_file(resources.files(__package__).joinpath("scenes.yaml")) as path:
        return {case.id: case for case in load_scene_file(Path(path))}


def kit_scene(name: str) -> SceneCase:
    return kit_scenes()[f"conformance.{name}"]


@dataclass(frozen=True)
class FeatureScene:
    """The scene a feature is checked with, the surface it renders at and its reference (a golden or None)."""

    feature: str
    case: SceneCase
    width: int
    height: int
    goldens: dict[int, Path]  # frame -> software golden of this size; frames without one use a reference render

    @property
    def origin(self) -> str:
        return "kit" if self.case.family == "conformance" else "corpus"


def png_size(path: Path) -> tuple[int, int] | None:
    with open(path, "rb") as handle:
        head = handle.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def feature_scene(feature: str, supported: frozenset[str], corpus: list[SceneCase], goldens_dir: Path | None,
                  display: tuple[int, int] | None = None, max_pixels: int | None = None) -> FeatureScene:
    """The fixed-load corpus scene using `feature` with the fewest other features (all supported), else the
    kit's own `conformance.<feature>`. A corpus scene renders at its software golden's size, unless that is
    larger than the device's display (a runner may draw on screen): then small, against a reference render.
    A golden larger than `max_pixels` (a slow device, conformance/sizing.py) gives the kit's own scene, drawn
    for the kit's small surface: a corpus scene shrunk to it may be all edges (a grid of 1-pixel borders)."""
    # Not an adaptive scene: a feature's job carries no complexity list.
    candidates = sorted((c for c in corpus if feature in c.features and c.features <= supported and not c.adaptive),
                        key=lambda c: (len(c.features), c.id))
    store = GoldenStore(goldens_dir) if goldens_dir is not None and goldens_dir.is_dir() else None
    for case in candidates:
        goldens: dict[int, Path] = {}
        size = None
        for frame in case.capture:
            path = store.path_for(SOFTWARE, REFERENCE_ARCH, case.id, frame) if store is not None else None
            if path is not None and path.is_file():
                size = size or png_size(path)
                if png_size(path) == size:
                    goldens[frame] = path
        if size is not None and max_pixels is not None and size[0] * size[1] > max_pixels:
            break
        if size is None or (display is not None and (size[0] > display[0] or size[1] > display[1])):
            return FeatureScene(feature, case, *KIT_SURFACE, {})
        return FeatureScene(feature, case, size[0], size[1], goldens)
    return FeatureScene(feature, kit_scene(feature), *KIT_SURFACE, {})


def load_project_corpus(scenes_dir: Path | None) -> list[SceneCase]:
    if scenes_dir is None or not scenes_dir.is_dir():
        return []
    cases, _errors = load_corpus(scenes_dir)  # a broken scene file is the suite's business, not the kit's
    return cases


def make_job(case: SceneCase, backend: str, *, mode: str, refresh_hz: float, warmup: int, frames: int,
             capture: tuple[int, ...] | None = None, size: tuple[int, int] = KIT_SURFACE,
             complexity: tuple[float, ...] | None = None) -> Job:
    return Job(backend=backend, mode=mode, refresh_hz=refresh_hz, warmup_frames=warmup, frames=frames,
               capture=tuple(case.capture) if capture is None else capture, seed=1,
               scene=case.job_scene(*size), complexity=complexity)


def sampler_job(features: list[str], backend: str, refresh_hz: float, frames: int = 6) -> Job:
    """Every given feature's kit scene drawn into one job: the determinism check launches it twice and compares
    its first and last frames."""
    ops = [op for feature in features for op in kit_scene(feature).job_scene(*KIT_SURFACE)["ops"]]
    scene = {"id": "conformance.sampler", "params": {}, "width": KIT_SURFACE[0], "height": KIT_SURFACE[1],
             "features": sorted({f for feature in features for f in kit_scene(feature).features}), "ops": ops}
    return Job(backend=backend, mode="uncapped", refresh_hz=refresh_hz, warmup_frames=0, frames=frames,
               capture=(0, frames - 1), seed=1, scene=scene)


def unknown_feature_job(backend: str, refresh_hz: float) -> Job:
    """A job whose scene needs an op no runner has heard of: it must be skipped, not drawn without it."""
    base = kit_scene("rect").job_scene(*KIT_SURFACE)
    ops = [*base["ops"], {"op": UNKNOWN_OP, "x": 0, "y": 0, "w": 10, "h": 10, "color": "#FF0000"}]
    scene = {**base, "id": "conformance.unknown_feature", "features": sorted([*base["features"], UNKNOWN_OP]),
             "ops": ops}
    return Job(backend=backend, mode="uncapped", refresh_hz=refresh_hz, warmup_frames=0, frames=3, capture=(0,),
               seed=1, scene=scene)
