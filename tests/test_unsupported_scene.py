"""A scene the device's backend does not support (a compressed texture format its probe does not list) is
skipped as "not supported", under CI too, and run.json says so; on the GLES2 backend, which lists ETC2, the
same scene runs (docs/scenes.md, "Not supported")."""

from __future__ import annotations

import pytest

from pytest_zbench.host.run_record import validate_run

pytestmark = pytest.mark.acceptance

SCENE = """\
family: packed
scenes:
  - id: packed.etc2
    ops:
      - {op: etc2_image, x: 4, y: 4, w: 40, h: 32, tex_w: 32, tex_h: 32, pattern: noise, seed: 3,
         upload: every_frame, filter: linear}
"""


def test_a_compressed_upload_scene_is_not_supported_on_the_raster_backend_even_in_ci(project, monkeypatch):
    project.write_scene("packed.yaml", SCENE)
    monkeypatch.setenv("CI", "true")  # a missing feature would fail here; an unsupported format skips
    result = project.run("--zbench-device=local", "-k", "packed", "-rs", goldens=True)
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*not supported: scene packed.etc2 measures etc2_rgb8 compressed texture upload, "
                                 "which backend 'software'*compressed_formats: none*"])
    document = project.run_json()
    assert validate_run(document) == []
    scene = next(s for s in document["scenes"] if s["id"] == "packed.etc2")
    assert scene["unsupported"] is True and scene["skipped"].startswith("not supported: ")
    assert scene["launches"] == []
