"""zbench-gles2's capture path, pixel for pixel: a scene of translucent rects whose colours round differently
under rounding and truncation, drawn by the runner on this machine's Mesa, read back (glReadPixels, the kit's
unpremultiply), written by the kit's PNG writer and opened here with Pillow, must hold exactly the values
computed here from the colours alone, on this machine and on the armhf and aarch64 builds under qemu-user. A
one-level error anywhere on the path (a premultiply that truncates, a blend or a readback that is off by one, a
PNG writer that shifts a byte) fails it; the reference goldens' tolerance would hide it.

The arithmetic (docs/display-list.md: colours are straight sRGB, composited premultiplied source-over onto the
frame's opaque white): a straight channel c of alpha a premultiplies to P = round(c * a / 255); over a pixel D of
alpha 255 the result is P + round(D * (255 - a) / 255) (no ties: 255 is odd), alpha 255; over white that is
P + 255 - a exactly. Rects on whole pixels, so that every pixel checked is covered fully (no edge coverage)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from parts import require
from PIL import Image
from test_native_runner import build

from pytest_zbench.protocol import read_result_json

REPO = Path(__file__).resolve().parents[2]

WIDTH, HEIGHT = 64, 32
# (x, y, w, h, colour): each colour's channels times its alpha have fractional parts on both sides of .5, so
# that truncation is one level below rounding in some channels and equal in others (see ROUNDING below).
RECTS = [
    (0, 0, 24, 16, "#3366CC80"),   # a = 128: 51 * 128 / 255 = 25.6 (truncates to 25), 102 -> 51.2, 204 -> 102.4
    (24, 0, 24, 16, "#FF01FE7F"),  # a = 127: 255 -> 127, 1 -> 0.498 (rounds to 0), 254 -> 126.5 (127 vs 126)
    (48, 0, 16, 16, "#C0A0E001"),  # a = 1: almost transparent, every channel under half a level
    (0, 16, 32, 16, "#10F0AAFE"),  # a = 254: 16 -> 15.94 (16 vs 15), 240 -> 239.06, 170 -> 169.33
    (32, 16, 32, 16, "#8181812B"),  # a = 43: 129 * 43 / 255 = 21.75 (22 vs 21)
    (12, 8, 40, 16, "#D5552AB3"),  # a = 179, over the others: D * 76 / 255 rounded on top of each
]


def _colour(text: str) -> tuple[int, int, int, int]:
    return tuple(int(text[i:i + 2], 16) for i in (1, 3, 5, 7))  # type: ignore[return-value]


def _premultiplied(channel: int, alpha: int) -> int:
    return (channel * alpha + 127) // 255  # round(c * a / 255): no ties, 255 is odd


def _over(dst: int, channel: int, alpha: int) -> int:
    return _premultiplied(channel, alpha) + (dst * (255 - alpha) + 127) // 255


def expected_pixels() -> list[list[tuple[int, int, int, int]]]:
    image = [[(255, 255, 255, 255)] * WIDTH for _ in range(HEIGHT)]
    for x, y, w, h, colour in RECTS:
        r, g, b, a = _colour(colour)
        for row in range(y, y + h):
            for col in range(x, x + w):
                d = image[row][col]
                image[row][col] = (_over(d[0], r, a), _over(d[1], g, a), _over(d[2], b, a), 255)
    return image


def test_the_expected_values_are_ones_that_truncation_would_get_wrong():
    """The scene is only a check of rounding if truncating would change pixels: in some channels, not all."""
    differs = same = 0
    for *_, colour in RECTS:
        r, g, b, a = _colour(colour)
        for c in (r, g, b):
            differs += c * a // 255 != _premultiplied(c, a)
            same += c * a // 255 == _premultiplied(c, a)
    assert differs >= 5 and same >= 5


@pytest.fixture(scope="module")
def host_runner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("native"))


@pytest.fixture(params=["host", "armhf", "arm64"])
def gles2_runner(request: pytest.FixtureRequest) -> list[str]:
    """This checkout's runner for this machine (on llvmpipe), or ci/native-devices.sh's ARM builds under
    qemu-user (on the sysroots' Mesa, softpipe): the same pixels are expected of every one."""
    if request.param == "host":
        runner = [str(request.getfixturevalue("host_runner"))]
    else:
        binary = REPO / "build" / "native" / request.param / "zbench-gles2"
        require(binary.is_file(), f"the {request.param} native runner (bash ci/native-devices.sh)")
        runner = [str(REPO / "ci" / "native-devices.sh"), "runner", request.param]
    probe = subprocess.run([*runner, "probe"], capture_output=True, text=True, timeout=300)
    if '"gles2"' not in probe.stdout:
        require(False, f"a headless EGL GLES2 context (Mesa): {probe.stderr.strip()}")
    return runner


def test_a_capture_of_translucent_rects_holds_exactly_the_computed_pixels(gles2_runner, tmp_path):
    ops = [{"op": "rect", "x": x, "y": y, "w": w, "h": h, "color": c} for x, y, w, h, c in RECTS]
    job = {"protocol": 1, "backend": "gles2", "mode": "uncapped", "refresh_hz": 60.0, "warmup_frames": 0,
           "frames": 2, "capture": [1], "seed": 1, "complexity": None, "gpu_timer": "none",  # no GPU clock needed
           "scene": {"id": "capture.rounding", "params": {}, "width": WIDTH, "height": HEIGHT, "features": ["rect"],
                     "ops": ops}}
    (tmp_path / "job.json").write_text(json.dumps(job))
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run([*gles2_runner, "run", str(tmp_path / "job.json"), str(out)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert read_result_json(out / "result.json").issues == []
    with Image.open(out / "capture-1.png") as png:
        assert (png.mode, png.size) == ("RGBA", (WIDTH, HEIGHT))
        got = [[png.getpixel((x, y)) for x in range(WIDTH)] for y in range(HEIGHT)]
    want = expected_pixels()
    wrong = [(x, y, got[y][x], want[y][x]) for y in range(HEIGHT) for x in range(WIDTH) if got[y][x] != want[y][x]]
    assert not wrong, f"{len(wrong)} pixels differ (x, y, captured, computed), first: {wrong[:8]}"
