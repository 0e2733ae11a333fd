"""SSIM against known properties, and flip-evaluator contained."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from parts import require

from pytest_zbench.golden.match import compare
from pytest_zbench.golden.perceptual import SSIM_K1, FlipError, flip, luminance, ssim, ssim_map
from pytest_zbench.golden.tolerance import parse_tolerance


def test_ssim_of_identical_images_is_one(ui):
    assert ssim(ui(), ui()) == pytest.approx(1.0, abs=1e-12)


def test_ssim_drops_monotonically_with_noise(ui):
    rng = np.random.default_rng(3)
    base = ui()
    noise = rng.normal(size=base.shape[:2] + (3,))
    values = []
    for sigma in (1, 4, 16, 48):
        noisy = base.copy()
        noisy[..., :3] = (base[..., :3] + sigma * noise).clip(0, 255).astype(np.uint8)
        values.append(ssim(base, noisy))
    assert 1.0 > values[0] > values[1] > values[2] > values[3] > 0


def test_ssim_of_constant_images_has_the_closed_form():
    # Flat images have no variance or covariance: SSIM reduces to the luminance term.
    a, b = 0.3, 0.7
    c1 = SSIM_K1**2
    smap = ssim_map(np.full((32, 32), a), np.full((32, 32), b))
    assert np.allclose(smap, (2 * a * b + c1) / (a * a + b * b + c1))


def test_ssim_is_symmetric(ui):
    assert ssim(ui(), ui(dx=2)) == pytest.approx(ssim(ui(dx=2), ui()), abs=1e-12)


def test_skimage_is_not_needed():
    # In a fresh interpreter: the reference test below imports scikit-image into this one.
    code = ("import sys, numpy as np; from pytest_zbench.golden.perceptual import ssim; "
            "a = np.full((24, 24, 4), 255, np.uint8); ssim(a, a); assert 'skimage' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("change", ["shifted", "recoloured", "noisy", "text"])
def test_ssim_matches_scikit_image(ui, text, change):
    """The same definition as scikit-image's structural_similarity with the Wang et al. (2004) settings its
    documentation gives (Gaussian weights, sigma 1.5, population covariance): map and mean, edges cropped alike."""
    try:
        from skimage.metrics import structural_similarity
    except ImportError:
        require(False, "scikit-image (the SSIM reference, a dev dependency in pyproject.toml)")
    base = text("Golden: 42") if change == "text" else ui()
    if change == "shifted":
        other = ui(dx=2)
    elif change == "recoloured":
        other = ui(card=(200, 200, 40))
    elif change == "text":
        other = text("Golden: 43")
    else:
        other = base.copy()
        noise = np.random.default_rng(5).normal(0, 12, base.shape[:2] + (3,))
        other[..., :3] = (base[..., :3] + noise).clip(0, 255).astype(np.uint8)
    x, y = luminance(base).astype(np.float64), luminance(other).astype(np.float64)
    mean, full = structural_similarity(x, y, data_range=1.0, gaussian_weights=True, sigma=1.5,
                                       use_sample_covariance=False, full=True)
    assert 0.2 < mean < 0.9999  # a real difference, not a trivial agreement at 1.0
    np.testing.assert_allclose(ssim_map(x, y), full, rtol=0, atol=1e-9)
    assert ssim(base, other) == pytest.approx(mean, abs=1e-9)


def test_flip_of_identical_images_is_zero(ui):
    assert float(flip(ui(), ui()).max()) == 0.0


def test_flip_grows_with_the_change(ui):
    small = flip(ui(), ui(card=(40, 120, 205))).mean()
    large = flip(ui(), ui(card=(200, 40, 40))).mean()
    assert 0 < small < large


def test_flip_sys_exit_is_contained_and_its_output_kept_off_stdout(ui, capfd):
    with pytest.raises(FlipError) as info:
        flip(ui(), ui(dx=1), ppd=-1)  # flip-evaluator prints and calls sys.exit(1) on this
    assert "exited (code 1)" in str(info.value) and "pixels per degree must be positive" in str(info.value)
    out, _ = capfd.readouterr()
    assert out == ""


def test_flip_runtime_errors_are_contained(ui):
    with pytest.raises(FlipError, match="resolutions differ"):
        flip(ui(), ui()[:50])


def test_flip_failure_is_recorded_and_fails_only_if_it_gates(ui, monkeypatch):
    import pytest_zbench.golden.match as match

    def broken(*args, **kwargs):
        raise FlipError("flip-evaluator is not installed")

    monkeypatch.setattr(match, "flip", broken)
    recorded = compare(ui(), ui(dx=1), parse_tolerance({"max_delta": 255, "max_pixels": 0}))
    assert recorded.passed and recorded.metrics["flip_mean"] is None and "not installed" in recorded.metrics["flip_error"]
    gated = compare(ui(), ui(dx=1), parse_tolerance({"flip_mean": 0.5}))
    assert [f[0] for f in gated.failures] == ["flip_mean"] and "not installed" in gated.failures[0][1]
