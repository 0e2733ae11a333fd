from __future__ import annotations

import os

import numpy as np
import pytest

from pytest_zbench import files as files_mod
from pytest_zbench.golden.store import (
    REFERENCE_ARCH,
    GoldenError,
    GoldenStore,
    decide_update,
    encode_png,
    golden_set,
    load_png,
    pixel_digest,
)


@pytest.fixture
def image() -> np.ndarray:
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, size=(24, 32, 4), dtype=np.uint8)
    img[:12, :, 3] = 255
    return img


def test_layout_and_software_sets_per_architecture(tmp_path):
    store = GoldenStore(tmp_path)
    assert store.path_for("gles2", "pi3b", "fill.alpha.x4", 60) == (tmp_path / "gles2/pi3b/fill.alpha.x4/frame-60.png").resolve()
    # The software set is the CPU architecture family, whatever the device class.
    assert golden_set("software", "pi3b", "aarch64") == golden_set("software", "mac-m1", "aarch64") == "aarch64"
    assert golden_set("software", "host", "x86_64") == "x86_64"
    assert golden_set("gles2", "pi3b", "aarch64") == "pi3b"
    with pytest.raises(GoldenError, match="machine.arch"):
        golden_set("software", "host", None)
    assert store.reference_key(store.key("software", "aarch64", "s", 3)) == store.key("software", REFERENCE_ARCH, "s", 3)
    assert REFERENCE_ARCH == "x86_64"


def test_digest_is_of_pixels_not_file_bytes(tmp_path, image):
    fast, small = encode_png(image, compress_level=0), encode_png(image, compress_level=9)
    assert fast != small
    (tmp_path / "a.png").write_bytes(fast)
    (tmp_path / "b.png").write_bytes(small)
    a, b = load_png(tmp_path / "a.png"), load_png(tmp_path / "b.png")
    assert pixel_digest(a) == pixel_digest(b) == pixel_digest(image)
    assert np.array_equal(a, image)  # straight alpha survives the round trip untouched


def test_digest_depends_on_size_and_every_byte(image):
    assert pixel_digest(image.reshape(32, 24, 4)) != pixel_digest(image)  # same bytes, other size
    changed = image.copy()
    changed[23, 31, 3] ^= 1
    assert pixel_digest(changed) != pixel_digest(image)


def test_write_then_load(tmp_path, image):
    store = GoldenStore(tmp_path)
    key = store.key("gles2", "pi3b", "fill.x1", 3)
    assert store.load(key) is None and not store.exists(key)
    path = store.write(key, image)
    assert path.is_file() and np.array_equal(store.load(key), image)
    assert store.digest(key) == pixel_digest(image)


@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_interrupted_write_leaves_no_partial_file(tmp_path, image, monkeypatch, where):
    store = GoldenStore(tmp_path)
    key = store.key("gles2", "pi3b", "fill.x1", 0)
    old = np.zeros_like(image)
    path = store.write(key, old)

    class Interrupted(BaseException):  # like KeyboardInterrupt: not an Exception
        pass

    if where == "write":
        real_fdopen = os.fdopen

        class HalfWriter:
            def __init__(self, fd, mode):
                self._h = real_fdopen(fd, mode)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self._h.close()

            def write(self, data):
                self._h.write(data[: len(data) // 2])
                raise Interrupted("killed mid-write")

        monkeypatch.setattr(files_mod.os, "fdopen", HalfWriter)
    elif where == "fsync":
        monkeypatch.setattr(files_mod.os, "fsync", lambda fd: (_ for _ in ()).throw(Interrupted("disk gone")))
    else:
        monkeypatch.setattr(files_mod.os, "replace", lambda a, b: (_ for _ in ()).throw(Interrupted("killed")))

    with pytest.raises(Interrupted):
        store.write(key, image)
    monkeypatch.undo()
    assert np.array_equal(load_png(path), old)  # the previous golden, whole
    assert sorted(p.name for p in path.parent.iterdir()) == ["frame-0.png"]  # no temp file left behind
    assert store.leftovers() == []


def test_interrupted_first_write_leaves_nothing(tmp_path, image, monkeypatch):
    store = GoldenStore(tmp_path)
    key = store.key("gles2", "pi3b", "new.scene", 0)
    monkeypatch.setattr(files_mod.os, "replace", lambda a, b: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        store.write(key, image)
    assert not store.path(key).exists() and list(store.path(key).parent.iterdir()) == []


def test_leftovers_lists_temp_files_of_a_killed_update(tmp_path):
    folder = tmp_path / "gles2" / "pi3b" / "s"
    folder.mkdir(parents=True)
    stray = folder / ".frame-0.png.abc123.tmp"
    stray.write_bytes(b"\x89PNG half")
    assert GoldenStore(tmp_path).leftovers() == [stray.resolve()]


@pytest.mark.parametrize("backend,device_class,scene,frame", [
    ("gles2", "pi3b", "../../etc", 0),
    ("gles2", "pi3b", "..", 0),
    ("gles2", "pi3b", "a/b", 0),
    ("gles2", "pi3b", "a\\b", 0),
    ("gles2", "pi3b", "/abs", 0),
    ("gles2", "pi3b", ".hidden", 0),
    ("gles2", "pi3b", "", 0),
    ("..", "pi3b", "s", 0),
    ("gles2", "../x", "s", 0),
    ("gles2", "pi3b", "s", -1),
    ("gles2", "pi3b", "s", True),
    ("gles2", "pi3b", "s", "0/../1"),
])
def test_paths_never_escape(tmp_path, backend, device_class, scene, frame):
    with pytest.raises(GoldenError):
        GoldenStore(tmp_path).path_for(backend, device_class, scene, frame)


def test_symlink_out_of_the_store_is_rejected(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "goldens"
    (root / "gles2").mkdir(parents=True)
    (root / "gles2" / "pi3b").symlink_to(outside)
    with pytest.raises(GoldenError, match="outside the store"):
        GoldenStore(root).path_for("gles2", "pi3b", "s", 0)


def test_sweep_style_scene_ids_are_allowed(tmp_path):
    path = GoldenStore(tmp_path).path_for("gles2", "pi3b", "fill.alpha[x=4],y@2", 0)
    assert path == tmp_path.resolve() / "gles2" / "pi3b" / "fill.alpha[x=4],y@2" / "frame-0.png"


def test_unused_goldens(tmp_path, image):
    store = GoldenStore(tmp_path)
    keep = store.write(store.key("gles2", "pi3b", "a", 0), image)
    gone = store.write(store.key("gles2", "pi3b", "b", 0), image)
    other_device = store.write(store.key("gles2", "nexus7", "b", 0), image)
    assert store.unused([keep]) == sorted([gone, other_device])
    assert store.unused([keep], within=[("gles2", "pi3b")]) == [gone]


def test_reference_falls_back_to_the_software_golden(tmp_path, image):
    store = GoldenStore(tmp_path)
    key = store.key("gles2", "pi3b", "a", 0)
    assert store.reference_for(key) is None
    shared = store.write(store.key("software", "x86_64", "a", 0), image)
    assert store.reference_for(key)[1] == shared
    own = store.write(key, image)
    assert store.reference_for(key)[1] == own
    assert store.reference_for(store.key("software", "x86_64", "zzz", 0)) is None


def test_a_software_capture_never_falls_back_to_another_architecture(tmp_path, image):
    store = GoldenStore(tmp_path)
    store.write(store.key("software", "x86_64", "a", 0), image)
    arm = store.key("software", "aarch64", "a", 0)
    assert store.reference_for(arm) is None
    own = store.write(arm, image)
    assert store.reference_for(arm) == (arm, own)


def test_load_rejects_garbage_with_the_path(tmp_path):
    bad = tmp_path / "frame-0.png"
    bad.write_bytes(b"not a png")
    with pytest.raises(GoldenError, match="frame-0.png"):
        load_png(bad)


# mode, exists, passed, identical, trusted -> write
POLICY = [
    (None, False, None, False, True, False),
    (None, True, False, False, True, False),
    ("missing", False, None, False, True, True),
    ("missing", True, False, False, True, False),
    ("missing", True, True, False, True, False),
    ("failed", False, None, False, True, True),
    ("failed", True, False, False, True, True),
    ("failed", True, True, False, True, False),
    ("all", False, None, False, True, True),
    ("all", True, True, False, True, True),
    ("all", True, False, False, True, True),
    ("all", True, True, True, True, False),  # identical: no churn
    # An untrusted capture (failed, partial or erroring launch) is never written, whatever the mode.
    ("missing", False, None, False, False, False),
    ("failed", True, False, False, False, False),
    ("all", True, False, False, False, False),
    ("all", False, None, False, False, False),
]


@pytest.mark.parametrize("mode,exists,passed,identical,trusted,write", POLICY)
def test_update_policy_table(mode, exists, passed, identical, trusted, write):
    decision = decide_update(mode, exists=exists, passed=passed, identical=identical, capture_trusted=trusted,
                             untrusted_reason="runner exited 1")
    assert decision.write is write
    if not trusted and mode:
        assert "runner exited 1" in decision.reason


def test_update_mode_is_validated():
    with pytest.raises(ValueError, match="missing"):
        decide_update("some", exists=True, passed=True, capture_trusted=True)
