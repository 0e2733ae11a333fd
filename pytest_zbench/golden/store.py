"""The golden store: goldens/<backend>/<set>/<scene_id>/frame-<N>.png, written atomically.

Goldens are compared by the digest of their decoded pixels (sha256 over size + RGBA bytes), never by
file bytes, so re-encoding a PNG at another compression level changes nothing. A set is where exact
equality holds: for a GPU backend the device class; for the software backend the CPU architecture family
the runner reports (Skia's raster pipeline rounds differently in its SSE and NEON paths, docs/goldens.md),
so goldens/software/x86_64 and goldens/software/aarch64. The x86_64 set is the reference: GPU backends
without their own golden and other architectures are also compared with it, under a declared tolerance.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ZbenchError
from ..files import TEMP_SUFFIX, write_bytes_atomic
from ..protocol import read_png_header
from ..settings import UPDATE_MODES
from .tolerance import SOFTWARE

# The software set every scene has: other architectures' captures (cross_arch tolerance) and GPU captures
# (cross_backend tolerance) are compared with it.
REFERENCE_ARCH = "x86_64"
# The layout before software goldens were split by architecture; found, it is named in the missing message.
LEGACY_SOFTWARE_SET = "any"

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# Scene ids may carry sweep parameters (fill.alpha[x=4], text,size=12); never separators or reserved chars.
_SCENE_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._\-+=,@\[\]()]{0,199}")


class GoldenError(ZbenchError):
    """A golden that cannot be located, read or written; the message names the path and what to do."""


def pixel_digest(pixels: np.ndarray) -> str:
    """sha256 of the decoded RGBA8 pixels and their size: equal iff the images are identical."""
    rgba = as_rgba8(pixels)
    h, w = rgba.shape[:2]
    hasher = hashlib.sha256(f"zbench-rgba8:{w}x{h}:".encode("ascii"))
    hasher.update(np.ascontiguousarray(rgba).tobytes())
    return hasher.hexdigest()


def as_rgba8(pixels: np.ndarray) -> np.ndarray:
    """Accept HxWx4 uint8 (RGBA) or HxWx3 uint8 (opaque RGB); anything else is an error, not a guess."""
    arr = np.asarray(pixels)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] not in (3, 4) or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise GoldenError(f"expected an HxWx4 uint8 RGBA image, got shape {arr.shape} dtype {arr.dtype}")
    if arr.shape[2] == 3:
        arr = np.concatenate([arr, np.full(arr.shape[:2] + (1,), 255, np.uint8)], axis=2)
    return arr


# A golden or capture is a screen: 16384 x 16384 is the largest surface a runner accepts. A PNG claiming more
# is refused from its header, before Pillow decodes (and allocates) anything.
MAX_PIXELS = 16384 * 16384


def load_png(path: str | Path) -> np.ndarray:
    """Decode a PNG into HxWx4 uint8 RGBA, unpremultiplied, as the runner protocol writes captures. Anything
    that is not an 8-bit PNG of at most MAX_PIXELS pixels is a GoldenError naming the file."""
    from PIL import Image

    header = read_png_header(path)
    if isinstance(header, str):
        raise GoldenError(f"{path}: {header}")
    if header.bit_depth != 8:
        raise GoldenError(f"{path}: a {header.bit_depth}-bit PNG; goldens and captures are 8-bit")
    if header.width * header.height > MAX_PIXELS:
        raise GoldenError(f"{path}: {header.width}x{header.height} pixels, more than any screen; not decoded")
    try:
        with Image.open(path) as image:
            image.load()
            rgba = image.convert("RGBA")
    except GoldenError:
        raise
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise GoldenError(f"{path}: cannot be decoded as a PNG ({exc})") from exc
    return np.asarray(rgba, dtype=np.uint8).copy()


def encode_png(pixels: np.ndarray, *, compress_level: int = 6) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(as_rgba8(pixels), "RGBA").save(buffer, format="PNG", compress_level=compress_level)
    return buffer.getvalue()


@dataclass(frozen=True)
class GoldenKey:
    backend: str
    device_class: str
    scene_id: str
    frame: int

    def relpath(self) -> Path:
        return Path(self.backend, self.device_class, self.scene_id, f"frame-{self.frame}.png")


def golden_set(backend: str, device_class: str | None, arch: str | None) -> str | None:
    """The folder under goldens/<backend>/ a device's captures are compared with exactly: the CPU
    architecture family for the software backend (`arch`, from the runner's probe), else the device class."""
    if backend != SOFTWARE:
        return device_class  # make_key reports a missing one
    if not arch:
        raise GoldenError("the software golden set follows the CPU architecture, and this device's runner did not "
                          "report one (probe key machine.arch, docs/runner-protocol.md)")
    return arch


def make_key(backend: str, device_class: str | None, scene_id: str, frame: int) -> GoldenKey:
    """Validate the parts. `device_class` is the set folder: see golden_set()."""
    if not isinstance(backend, str) or not _NAME_RE.fullmatch(backend):
        raise GoldenError(f"backend {backend!r} is not a valid golden folder name (letters, digits, . _ -)")
    if not isinstance(device_class, str) or not _NAME_RE.fullmatch(device_class):
        raise GoldenError(f"device_class {device_class!r} is not a valid golden folder name (letters, digits, . _ -); set it in devices.yaml")
    if not isinstance(scene_id, str) or not _SCENE_RE.fullmatch(scene_id) or scene_id in (".", ".."):
        raise GoldenError(f"scene id {scene_id!r} cannot name a golden folder: no path separators, no leading '.', at most 200 characters")
    if not isinstance(frame, int) or isinstance(frame, bool) or frame < 0:
        raise GoldenError(f"frame {frame!r} must be a non-negative integer")
    return GoldenKey(backend, device_class, scene_id, frame)


class GoldenStore:
    """Goldens under one root folder (the repository's goldens/)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def key(self, backend: str, device_class: str | None, scene_id: str, frame: int) -> GoldenKey:
        return make_key(backend, device_class, scene_id, frame)

    def path(self, key: GoldenKey) -> Path:
        """The golden's path inside the root. Its folder must resolve inside the root (a folder linked out of
        the store is refused); the file itself may be a link, which `load` refuses when it leads outside and
        `write` replaces rather than follows."""
        root = self.root.resolve()
        path = root / key.relpath()
        folder = path.parent.resolve()
        if not folder.is_relative_to(root):
            raise GoldenError(f"golden folder {path.parent} of {key.scene_id} resolves to {folder}, outside the "
                              f"store {root}; goldens are only read and written inside it: replace the link "
                              "with a folder")
        return path

    def path_for(self, backend: str, device_class: str | None, scene_id: str, frame: int) -> Path:
        return self.path(self.key(backend, device_class, scene_id, frame))

    def exists(self, key: GoldenKey) -> bool:
        """A golden is there, readable or not (a link counts, even one that leads nowhere)."""
        path = self.path(key)
        return path.is_file() or path.is_symlink()

    def load(self, key: GoldenKey) -> np.ndarray | None:
        """The golden's pixels; None when there is none. GoldenError for one that cannot be used (a link out
        of the store, a file that is not a PNG): the message says how to replace it."""
        path = self.path(key)
        if path.is_symlink():
            target = path.resolve()
            if not target.is_relative_to(self.root.resolve()):
                raise GoldenError(f"{path} is a link to {target}, outside the golden store; goldens are only "
                                  "read inside it: replace the link with the image (--zbench-update-goldens="
                                  "failed does so from a trusted capture)")
            if not target.is_file():
                raise GoldenError(f"{path} is a link to {target}, which does not exist; delete the link or "
                                  "replace it with --zbench-update-goldens=failed")
        if not path.is_file():
            return None
        return load_png(path)

    def digest(self, key: GoldenKey) -> str | None:
        pixels = self.load(key)
        return None if pixels is None else pixel_digest(pixels)

    def write(self, key: GoldenKey, pixels: np.ndarray) -> Path:
        """Atomically (re)write a golden: a link in its place is replaced, never written through. Callers
        decide first with `decide_update`."""
        path = self.path(key)
        write_bytes_atomic(path, encode_png(pixels))
        return path

    def reference_key(self, key: GoldenKey) -> GoldenKey:
        """The same scene and frame in the reference set, goldens/software/x86_64."""
        return make_key(SOFTWARE, REFERENCE_ARCH, key.scene_id, key.frame)

    def reference_for(self, key: GoldenKey) -> tuple[GoldenKey, Path] | None:
        """The golden to compare with: the key's own, else (for a GPU backend) the reference software golden
        of the same scene and frame, compared with the cross_backend tolerance. None when neither exists.
        A software capture has only its own architecture's golden: another architecture's is never its
        reference (the cross_arch comparison is a second check, never a pass in place of this one)."""
        if self.exists(key):
            return key, self.path(key)
        if key.backend != SOFTWARE:
            shared = self.reference_key(key)
            if self.exists(shared):
                return shared, self.path(shared)
        return None

    def legacy_software_set(self) -> Path | None:
        """goldens/software/any, the single software set of the layout before sets per architecture."""
        folder = self.root / SOFTWARE / LEGACY_SOFTWARE_SET
        return folder if folder.is_dir() else None

    def all_goldens(self, within: Iterable[tuple[str, str]] | None = None) -> list[Path]:
        """Every frame-*.png in the store, or only under the given (backend, device_class) folders."""
        root = self.root.resolve()
        if within is None:
            bases = [root]
        else:
            keys = [make_key(b, c, "x", 0) for b, c in within]
            bases = [root / k.backend / k.device_class for k in keys]
        found: list[Path] = []
        for base in bases:
            if base.is_dir():
                found.extend(p for p in base.rglob("frame-*.png") if p.is_file())
        return sorted(set(found))

    def unused(self, expected: Iterable[str | Path], within: Iterable[tuple[str, str]] | None = None) -> list[Path]:
        """Goldens that no scene uses any more: stored paths not in `expected` (paths from `path`/`path_for`).
        Pass `within` to look only under the backends/device classes this session could have expected."""
        wanted = {Path(p).resolve() for p in expected}
        return [p for p in self.all_goldens(within) if p not in wanted]

    def leftovers(self) -> list[Path]:
        """Temp files left by an update that was killed mid-write (never a golden; safe to delete)."""
        root = self.root.resolve()
        return sorted(p for p in root.rglob(f".*{TEMP_SUFFIX}") if p.is_file()) if root.is_dir() else []


# --------------------------------------------------------------------------------------- update policy


@dataclass(frozen=True)
class UpdateDecision:
    write: bool
    reason: str


def decide_update(
    mode: str | None,
    *,
    exists: bool,
    passed: bool | None,
    identical: bool = False,
    capture_trusted: bool,
    untrusted_reason: str = "",
) -> UpdateDecision:
    """Whether to (re)write a golden. Pure: no I/O.

    mode: None (no updating) or 'missing' | 'failed' | 'all'. exists: the key's own golden is on disk.
    passed: the comparison with the reference (own or cross-backend), None if nothing was compared.
    identical: the capture's pixels equal the existing golden's. capture_trusted: False when the launch
    failed, was partial, or reported errors (GL errors, NaNs, shader failures, missing capture) — such a
    capture is never written, whatever the mode.
    """
    if mode is not None and mode not in UPDATE_MODES:
        raise ValueError(f"update mode {mode!r} is not one of {list(UPDATE_MODES)}")
    if mode is None:
        return UpdateDecision(False, "not updating goldens")
    if not capture_trusted:
        why = f": {untrusted_reason}" if untrusted_reason else ""
        return UpdateDecision(False, f"capture not trusted{why}; golden left as it was")
    if not exists:
        return UpdateDecision(True, "golden missing")
    if identical:
        return UpdateDecision(False, "golden identical to the capture")
    if mode == "missing":
        return UpdateDecision(False, "golden exists (mode 'missing')")
    if mode == "failed":
        if passed is False:
            return UpdateDecision(True, "comparison failed (mode 'failed')")
        return UpdateDecision(False, "comparison passed (mode 'failed')")
    return UpdateDecision(True, "rewriting (mode 'all')")
