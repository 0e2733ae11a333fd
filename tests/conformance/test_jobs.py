"""The kit's jobs: its own scenes cover every op of the display list, and each feature is checked with the
corpus scene that isolates it best, at its golden's size when the device's screen can hold it."""

from __future__ import annotations

from pathlib import Path

from pytest_zbench.conformance.jobs import (
    FEATURES,
    KIT_SURFACE,
    feature_scene,
    kit_scene,
    kit_scenes,
    load_project_corpus,
    sampler_job,
)
from pytest_zbench.protocol import Job
from pytest_zbench.scenes import OPS
from pytest_zbench.schema import violations

REPO = Path(__file__).resolve().parents[2]
CORPUS = load_project_corpus(REPO / "scenes")
EVERYTHING = frozenset(FEATURES)


def test_the_kit_has_a_scene_for_every_op_drawing_nothing_but_it_and_rect():
    assert set(FEATURES) == set(OPS)
    for feature in FEATURES:
        assert kit_scene(feature).features <= {feature, "rect"} and feature in kit_scene(feature).features
    assert kit_scene("timing").features == {"rect"}
    assert kit_scene("complexity").adaptive


def test_the_kit_jobs_validate_against_the_job_schema():
    for case in kit_scenes().values():
        job = Job(backend="gles2", mode="paced", refresh_hz=60.0, warmup_frames=1, frames=2, capture=(0,), seed=1,
                  scene=case.job_scene(*KIT_SURFACE), complexity=(1.0, 2.0, 3.0) if case.adaptive else None)
        assert violations("job", job.to_dict()) == [], case.id
    assert violations("job", sampler_job(list(FEATURES), "gles2", 60.0).to_dict()) == []


def test_a_feature_is_checked_with_the_corpus_scene_that_isolates_it_at_its_golden_size():
    scene = feature_scene("rect", EVERYTHING, CORPUS, REPO / "goldens")
    assert scene.case.id == "fill.alpha.x1" and (scene.width, scene.height) == (800, 480)
    assert scene.goldens == {0: REPO / "goldens" / "software" / "x86_64" / "fill.alpha.x1" / "frame-0.png"}


def test_only_scenes_whose_every_feature_is_listed_are_candidates():
    scene = feature_scene("clip", frozenset({"rect", "clip"}), CORPUS, REPO / "goldens")
    assert scene.origin == "kit" and scene.case.id == "conformance.clip"  # every clip scene of the corpus repeats
    assert (scene.width, scene.height) == KIT_SURFACE and scene.goldens == {}


def test_a_golden_larger_than_the_screen_is_not_used():
    scene = feature_scene("rect", EVERYTHING, CORPUS, REPO / "goldens", display=(480, 320))
    assert scene.case.id == "fill.alpha.x1" and (scene.width, scene.height) == KIT_SURFACE and scene.goldens == {}


def test_without_goldens_the_corpus_scene_renders_small():
    scene = feature_scene("rect", EVERYTHING, CORPUS, None)
    assert scene.case.id == "fill.alpha.x1" and (scene.width, scene.height) == KIT_SURFACE and not scene.goldens


def test_a_golden_over_the_slow_devices_pixel_budget_gives_the_kits_own_scene():
    scene = feature_scene("rect", EVERYTHING, CORPUS, REPO / "goldens", max_pixels=128 * 80)
    assert scene.origin == "kit" and scene.case.id == "conformance.rect"
    assert (scene.width, scene.height) == KIT_SURFACE and scene.goldens == {}
    assert feature_scene("rect", EVERYTHING, CORPUS, REPO / "goldens", max_pixels=800 * 480).case.id == "fill.alpha.x1"
