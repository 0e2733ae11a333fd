"""The runner kit's C tests (native/kit/tests/test_kit.c) from the test suite, so that a failure shows in the
pytest run: built for this machine under ASan and UBSan and run (ci/test.sh's `make -C native check` also runs the
armhf and aarch64 builds under qemu-user). The PNGs the C tests write with the kit's writer are then opened here
with Pillow, an independent decoder with zlib behind it, and must hold the pattern computed here."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from parts import require
from PIL import Image

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kit_tests(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    require(shutil.which("make") is not None and shutil.which("gcc") is not None, "make and gcc")
    out = tmp_path_factory.mktemp("kit-tests")
    done = subprocess.run(["make", "-s", "-C", str(REPO / "native" / "kit" / "tests"), f"OUT={out}", "ARCHES=host"],
                          capture_output=True, text=True, timeout=300)
    return done, out / "host" / "png"


def test_the_kit_tests_pass(kit_tests):
    done, _ = kit_tests
    assert done.returncode == 0, done.stdout + done.stderr
    summary = re.search(r"zbench-kit-tests: (\d+) checks, 0 failed", done.stdout)
    assert summary and int(summary.group(1)) > 200, done.stdout  # they ran, all of them


def _pattern(x: int, y: int) -> tuple[int, int, int, int]:
    """test_kit.c's pattern(): every byte differs from its neighbours', alpha included."""
    return ((x * 7 + y) % 256, (y * 13 + x * 3) % 256, (x ^ y) % 256, 255 - (x + y) % 256)


@pytest.mark.parametrize("size", [(1, 1), (5, 3), (64, 255), (64, 256), (300, 200)])
def test_the_kits_png_opens_in_pillow_with_every_pixel_as_written(kit_tests, size):
    """Sizes around the writer's stored-block split (65535 bytes: 257-byte scanlines times 255 rows is exactly
    one block): a CRC, an Adler-32 or a block length off anywhere makes Pillow refuse the file or misread it."""
    done, folder = kit_tests
    assert done.returncode == 0, done.stdout + done.stderr
    w, h = size
    with Image.open(folder / f"pattern-{w}x{h}.png") as png:
        png.load()  # decodes every IDAT byte and checks the zlib stream's checksum
        assert (png.mode, png.size) == ("RGBA", (w, h))
        data = png.tobytes()
    want = bytes(v for y in range(h) for x in range(w) for v in _pattern(x, y))
    assert data == want
