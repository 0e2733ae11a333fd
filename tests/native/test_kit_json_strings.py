"""The runner kit's JSON writer (native/kit/zbench_kit.c: zk_buf_str for the probe, fput_json_str for
result.json) given strings that must be escaped: a backslash, a quote, line breaks, tabs, control characters,
DEL and non-ASCII text. A small engine of this folder's (echo_engine.c), compiled with the host's cc against
the kit's sources as kit.mk lists them, says the strings back; Python's json module must read what the kit wrote
and get the same string. No GL: the engine draws nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from parts import require

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "native" / "kit"
# Every character JSON must escape (the quote, the backslash, U+0000 to U+001F: C strings stop at NUL, so from
# U+0001), DEL (not escaped, but a writer that escapes "non-printable" bytes might), two- three- and four-byte
# UTF-8, and a slash (which may be escaped or not).
AWKWARD = 'back\\slash "quoted" line\nbreak\ttab\rreturn \x01\x08\x0c\x1f \x7f é → 𝄞 a/b'

MAKEFILE = """\
include {kit}/kit.mk
{out}: {engine} $(KIT_SRC) $(KIT_HEADERS)
\t$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wno-missing-field-initializers -I$(KIT_DIR) \\
\t    -o $@ {engine} $(KIT_SRC) -lm
"""


@pytest.fixture(scope="module")
def echo_runner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require(shutil.which("make") is not None and shutil.which("cc") is not None, "make and a C compiler")
    folder = tmp_path_factory.mktemp("echo")
    out = folder / "zbench-kit-echo"
    makefile = folder / "Makefile"
    makefile.write_text(MAKEFILE.format(kit=KIT, out=out, engine=Path(__file__).with_name("echo_engine.c")))
    done = subprocess.run(["make", "-s", "-f", str(makefile), "CC=cc"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    return out


def test_the_probe_writes_an_awkward_string_as_json_that_reads_back_the_same(echo_runner):
    done = subprocess.run([str(echo_runner), "probe"], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "ZBENCH_ECHO": AWKWARD})
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    assert probe["build"]["describe"] == AWKWARD


@pytest.mark.parametrize("ascii_only", [True, False], ids=["escaped", "utf8"])
def test_result_json_writes_an_awkward_scene_id_as_json_that_reads_back_the_same(echo_runner, tmp_path, ascii_only):
    """The scene id goes in through the kit's parser (as \\u escapes, surrogate pairs included, or as raw UTF-8)
    and out through result.json's writer: both must keep every character."""
    job = {"protocol": 1, "backend": "null", "mode": "uncapped", "refresh_hz": 60.0, "warmup_frames": 0,
           "frames": 1, "capture": [], "seed": 1, "complexity": None,
           "scene": {"id": AWKWARD, "params": {}, "width": 4, "height": 4, "features": ["rect"], "ops": []}}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job, ensure_ascii=ascii_only), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run([str(echo_runner), "run", str(path), str(out)], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    assert [(i["kind"], i["detail"]) for i in result["issues"]] == [("shader", AWKWARD)]
