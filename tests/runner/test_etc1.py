"""The ETC1 / ETC2 RGB8 encoder of the etc2_image op (pytest_zbench/runner/etc1.py), checked against Skia's own
decoder: the blocks it writes decode, in Skia, to exactly the pixels it says they do."""

from __future__ import annotations

import numpy as np
import pytest
import skia

from pytest_zbench.runner.etc1 import compressed_size, encode
from pytest_zbench.runner.interpreter import checker_pixels, compile_scene, noise_pixels


def skia_decoded(data: bytes, width: int, height: int) -> np.ndarray:
    image = skia.Image.MakeRasterFromCompressed(skia.Data.MakeWithCopy(data), width, height,
                                                skia.Image.CompressionType.kETC2_RGB8_UNORM)
    assert image is not None
    return np.array(image.toarray(colorType=skia.kRGBA_8888_ColorType))[:, :, :3]


@pytest.mark.parametrize("pixels", [
    noise_pixels(64, 32, 7)[:, :, :3],
    checker_pixels(32, 64)[:, :, :3],
    # A smooth gradient: what block compression is made for.
    np.stack(np.broadcast_arrays(np.arange(80)[None, :] * 3, np.arange(48)[:, None] * 5, 128), axis=-1).astype(np.uint8),
])
def test_skia_decodes_the_blocks_to_the_pixels_the_encoder_predicts(pixels):
    h, w, _ = pixels.shape
    data, decoded = encode(np.ascontiguousarray(pixels))
    assert len(data) == compressed_size(w, h) == w * h // 2  # 4 bits a texel: an eighth of RGBA
    assert np.array_equal(skia_decoded(data, w, h), decoded)


def test_the_encoding_is_close_where_the_image_is_smooth_and_exact_on_two_colour_blocks():
    ramp = np.repeat(np.linspace(40, 200, 64).astype(np.uint8)[None, :, None], 16, axis=0).repeat(3, axis=2)
    _, decoded = encode(ramp)
    assert np.abs(decoded.astype(int) - ramp).mean() < 3
    # Each 4x4 block of a flat colour decodes within the 4-bit base and the smallest modifier of it.
    flat = np.full((8, 8, 3), (200, 30, 90), dtype=np.uint8)
    _, decoded = encode(flat)
    assert np.abs(decoded.astype(int) - flat).max() <= 8


def test_sizes_that_are_not_whole_blocks_are_refused():
    with pytest.raises(ValueError, match="multiples of 4"):
        encode(np.zeros((6, 8, 3), dtype=np.uint8))


def test_the_op_draws_the_decoded_texels_and_counts_the_compressed_bytes():
    ops = [{"op": "etc2_image", "x": 0, "y": 0, "w": 32, "h": 32, "tex_w": 32, "tex_h": 32, "pattern": "noise",
            "seed": 7, "upload": "every_frame", "filter": "nearest"}]
    program = compile_scene(ops)
    surface = skia.Surface(32, 32)
    counters = program.render(surface.getCanvas(), 0, None)
    assert counters.upload_bytes == 32 * 32 // 2 and counters.draw_calls == 1
    drawn = np.array(surface.makeImageSnapshot().toarray(colorType=skia.kRGBA_8888_ColorType))[:, :, :3]
    assert np.array_equal(drawn, encode(noise_pixels(32, 32, 7)[:, :, :3].copy())[1])
