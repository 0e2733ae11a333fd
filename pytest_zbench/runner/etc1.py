"""An ETC1 encoder for the `etc2_image` op (docs/display-list.md): RGB pixels to ETC1 blocks, which are valid
ETC2 RGB8 blocks too (ETC2 is a superset: its individual and differential modes are ETC1's), so one encoding
serves GL_OES_compressed_ETC1_RGB8_texture and GL_COMPRESSED_RGB8_ETC2 (Khronos Data Format Specification 1.3,
"ETC1 Compressed Texture Image Formats").

A 4x4 block is 64 bits: two 2x4 half-blocks (flip bit 0: left and right columns), each an RGB444 base colour
and a 3-bit table codeword, and for each pixel a 2-bit index selecting the modifier added to all three
channels of its half-block's base. The encoder uses only the individual mode without flip: each half-block's
base is its mean colour rounded to 4 bits, and every codeword is tried with each pixel's best modifier,
keeping the codeword of least squared error. Quality is not the point (the benchmark measures the upload and
the sampling of compressed texels, not the encoder); the decoded pixels (`decode`) are what a conforming
decoder produces, and tests/runner/test_etc1.py checks them against Skia's own decoder.
"""

from __future__ import annotations

import numpy as np

# The modifier table: codeword -> (small, large); indices 0..3 select +small, +large, -small, -large.
MODIFIERS = np.array([[2, 8], [5, 17], [9, 29], [13, 42], [18, 60], [24, 80], [33, 106], [47, 183]], dtype=np.int32)
# Index value (MSB, LSB) -> modifier column: 00 +small, 01 +large, 10 -small, 11 -large.
_SIGNED = np.stack([MODIFIERS[:, 0], MODIFIERS[:, 1], -MODIFIERS[:, 0], -MODIFIERS[:, 1]], axis=1)  # (8, 4)
BLOCK_BYTES = 8


def _blocks(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) -> (blocks, 2 half-blocks, 8 pixels, 3): half-block 0 is columns 0-1, 1 is columns 2-3; the
    8 pixels of a half-block in the block's pixel order (column-major: index x * 4 + y)."""
    h, w, _ = rgb.shape
    b = rgb.reshape(h // 4, 4, w // 4, 4, 3).transpose(0, 2, 3, 1, 4)  # (by, bx, x, y, 3): column-major
    blocks: np.ndarray = b.reshape(-1, 2, 8, 3).astype(np.int32)
    return blocks


def encode(rgb: np.ndarray) -> tuple[bytes, np.ndarray]:
    """ETC1 data of an (H, W, 3) uint8 image (H and W multiples of 4), blocks in row-major order, and the
    pixels a decoder gives back from it ((H, W, 3) uint8)."""
    h, w, channels = rgb.shape
    if channels != 3 or h % 4 or w % 4 or h == 0 or w == 0:
        raise ValueError(f"ETC1 needs an (H, W, 3) image with H and W multiples of 4, got {rgb.shape}")
    px = _blocks(rgb)  # (n, 2, 8, 3)
    base4 = np.clip(np.rint(px.mean(axis=2) / 17.0), 0, 15).astype(np.int32)  # (n, 2, 3)
    base = base4 * 17
    best_err = np.full(px.shape[:2], np.iinfo(np.int64).max, dtype=np.int64)
    best_cw = np.zeros(px.shape[:2], dtype=np.int32)
    best_idx = np.zeros(px.shape[:3], dtype=np.int32)
    for cw in range(8):
        # (n, 2, 4 candidates, 3): the base plus each modifier, clamped as a decoder clamps
        candidates = np.clip(base[:, :, None, :] + _SIGNED[cw][None, None, :, None], 0, 255)
        err = ((px[:, :, :, None, :] - candidates[:, :, None, :, :]) ** 2).sum(axis=-1)  # (n, 2, 8, 4)
        idx = err.argmin(axis=-1)
        total = np.take_along_axis(err, idx[..., None], axis=-1)[..., 0].sum(axis=-1)
        better = total < best_err
        best_err = np.where(better, total, best_err)
        best_cw = np.where(better, cw, best_cw)
        best_idx = np.where(better[..., None], idx, best_idx)
    # The 64-bit words, big-endian: R1 R2 G1 G2 B1 B2 (4 bits each), cw1 cw2 (3 bits), diff 0, flip 0, then
    # the indices' MSBs (bit 16 + i) and LSBs (bit i) of pixel i.
    word = np.zeros(px.shape[0], dtype=np.uint64)
    for shift, value in ((60, base4[:, 0, 0]), (56, base4[:, 1, 0]), (52, base4[:, 0, 1]), (48, base4[:, 1, 1]),
                         (44, base4[:, 0, 2]), (40, base4[:, 1, 2]), (37, best_cw[:, 0]), (34, best_cw[:, 1])):
        word |= value.astype(np.uint64) << np.uint64(shift)
    index = best_idx.reshape(-1, 16).astype(np.uint64)  # pixel i = x * 4 + y: half-block 0 holds i 0..7
    bit = np.arange(16, dtype=np.uint64)
    word |= (((index >> np.uint64(1)) & np.uint64(1)) << (bit + np.uint64(16))).sum(axis=1, dtype=np.uint64)
    word |= ((index & np.uint64(1)) << bit).sum(axis=1, dtype=np.uint64)
    decoded_px = np.clip(base[:, :, None, :] + np.take_along_axis(
        _SIGNED[best_cw], best_idx, axis=-1)[..., None], 0, 255)  # (n, 2, 8, 3)
    decoded = decoded_px.reshape(h // 4, w // 4, 4, 4, 3).transpose(0, 3, 1, 2, 4).reshape(h, w, 3)
    return word.astype(">u8").tobytes(), decoded.astype(np.uint8)


def compressed_size(width: int, height: int) -> int:
    """Bytes of ETC1 / ETC2 RGB8 data of a width x height image: 8 per 4x4 block (half a byte a texel)."""
    return ((width + 3) // 4) * ((height + 3) // 4) * BLOCK_BYTES
