"""Golden triage kept in the repository: per scene and frame of a golden set, the accepted digests (images that
pass at once, several where a backend legitimately alternates) and the rejected ones (known-bad images that
fail at once, with the reason and the date). Everything else is compared with the golden PNG under the scene's
tolerance, and a capture that fails there (or has no golden) is untriaged. docs/goldens.md, "Triage".

One file per scene folder, beside its PNGs: goldens/<backend>/<set>/<scene_id>/triage.yaml. Keys sorted, one
digest per line, so that an accept or a reject is a one- or three-line diff in review:

    frame-0:
      accepted:
      - 0b6f...e1
      rejected:
        9c2a...77:
          date: '2026-12-04'
          reason: the label is clipped on the right

A digest is pixel_digest's (sha256 over the decoded RGBA pixels and their size), as everywhere in the store:
re-encoding a PNG changes its bytes, never its digest.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ..files import write_bytes_atomic
from ..yaml_loader import load_yaml
from .store import GoldenError, GoldenKey, GoldenStore, pixel_digest

TRIAGE_FILE = "triage.yaml"
_DIGEST_RE = re.compile(r"[0-9a-f]{64}")
_FRAME_RE = re.compile(r"frame-(0|[1-9][0-9]*)")
HEADER = ("# Golden triage of this scene (docs/goldens.md, \"Triage\"): accepted images pass at once, rejected "
          "ones fail at once.\n# Written by `zbench goldens accept|reject`; digests are sha256 of the decoded "
          "pixels.\n")


@dataclass(frozen=True)
class Rejection:
    reason: str
    date: str


@dataclass
class FrameTriage:
    accepted: set[str] = field(default_factory=set)
    rejected: dict[str, Rejection] = field(default_factory=dict)


@dataclass
class SceneTriage:
    """The triage file of one scene folder; `frames` is keyed by frame index."""

    path: Path
    frames: dict[int, FrameTriage] = field(default_factory=dict)

    def frame(self, n: int) -> FrameTriage:
        return self.frames.get(n, FrameTriage())

    def text(self) -> str:
        data: dict[str, Any] = {}
        for n in sorted(self.frames):
            entry = self.frames[n]
            section: dict[str, Any] = {}
            if entry.accepted:
                section["accepted"] = sorted(entry.accepted)
            if entry.rejected:
                section["rejected"] = {d: {"date": r.date, "reason": r.reason} for d, r in entry.rejected.items()}
            if section:
                data[f"frame-{n}"] = section
        # Sorted by frame number, not as text: frame-10 after frame-9.
        body = "".join(yaml.safe_dump({k: v}, sort_keys=True, default_flow_style=False, width=10_000,
                                      allow_unicode=True) for k, v in data.items())
        return HEADER + body


def triage_path(store: GoldenStore, key: GoldenKey) -> Path:
    """The scene folder's triage file; the folder must resolve inside the store (GoldenStore.path)."""
    return store.path(key).parent / TRIAGE_FILE


def load_triage(store: GoldenStore, key: GoldenKey) -> SceneTriage:
    """The triage of the key's scene folder (empty when there is no file). GoldenError naming the file and the
    key for one that cannot be used."""
    path = triage_path(store, key)
    if path.is_symlink():
        raise GoldenError(f"{path} is a link; a triage file is only read inside the golden store: replace it with "
                          "the file")
    if not path.is_file():
        return SceneTriage(path)
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise GoldenError(f"{path}: cannot be read as YAML ({exc}); fix it, or restore it from git") from exc
    return _parse(path, data)


def _parse(path: Path, data: Any) -> SceneTriage:
    def bad(where: str, what: str) -> GoldenError:
        return GoldenError(f"{path}: {where}: {what} (docs/goldens.md, \"Triage\"); fix the file, or restore it "
                           "from git")

    triage = SceneTriage(path)
    if data is None:
        return triage
    if not isinstance(data, dict):
        raise bad("the file", "expected a mapping of frame-N keys")
    for name, section in data.items():
        match = _FRAME_RE.fullmatch(str(name))
        if match is None:
            raise bad(f"key {name!r}", "expected frame-N, N the captured frame")
        if not isinstance(section, dict) or set(section) - {"accepted", "rejected"}:
            raise bad(f"{name}", "expected a mapping with `accepted` (a list of digests) and/or `rejected`")
        entry = FrameTriage()
        accepted = section.get("accepted") or []
        if not isinstance(accepted, list):
            raise bad(f"{name}.accepted", "expected a list of digests")
        for digest in accepted:
            if not isinstance(digest, str) or not _DIGEST_RE.fullmatch(digest):
                raise bad(f"{name}.accepted", f"{digest!r} is not a digest (64 lowercase hex digits)")
            entry.accepted.add(digest)
        rejected = section.get("rejected") or {}
        if not isinstance(rejected, dict):
            raise bad(f"{name}.rejected", "expected a mapping of digest to {reason, date}")
        for digest, why in rejected.items():
            if not isinstance(digest, str) or not _DIGEST_RE.fullmatch(digest):
                raise bad(f"{name}.rejected", f"{digest!r} is not a digest (64 lowercase hex digits)")
            if not isinstance(why, dict) or not isinstance(why.get("reason"), str) or not why["reason"].strip():
                raise bad(f"{name}.rejected.{digest[:12]}", "expected {reason: TEXT, date: YYYY-MM-DD}")
            entry.rejected[digest] = Rejection(why["reason"], str(why.get("date", "")))
        both = entry.accepted & set(entry.rejected)
        if both:
            raise bad(name, f"digest {sorted(both)[0][:12]}... is both accepted and rejected")
        triage.frames[int(match.group(1))] = entry
    return triage


def save_triage(triage: SceneTriage) -> None:
    write_bytes_atomic(triage.path, triage.text().encode("utf-8"))


def today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


@dataclass(frozen=True)
class Applied:
    key: GoldenKey
    digest: str
    triage_file: Path
    golden_written: Path | None  # the PNG written: there was none (or --replace)
    changed: bool  # False: the triage already said so


def accept(store: GoldenStore, key: GoldenKey, pixels: np.ndarray, *, replace: bool = False) -> Applied:
    """Record the image's digest as accepted for the key (and no longer rejected). The image becomes the golden
    PNG when the key has none (the tolerance reference every other capture is compared with), or when
    `replace`."""
    digest = pixel_digest(pixels)
    triage = load_triage(store, key)
    entry = triage.frames.setdefault(key.frame, FrameTriage())
    changed = digest not in entry.accepted or digest in entry.rejected
    entry.accepted.add(digest)
    entry.rejected.pop(digest, None)
    written = None
    if not store.exists(key) or (replace and store.digest(key) != digest):
        written = store.write(key, pixels)
    if changed:
        save_triage(triage)
    return Applied(key, digest, triage.path, written, changed or written is not None)


def reject(store: GoldenStore, key: GoldenKey, pixels: np.ndarray, reason: str, *, date: str | None = None) -> Applied:
    """Record the image's digest as rejected for the key with the reason (and no longer accepted). The golden PNG
    is left alone: a rejected image equal to it fails all the same (the triage is read first)."""
    if not reason.strip():
        raise GoldenError("a rejection needs a reason (--reason TEXT): it is what the failing test says")
    digest = pixel_digest(pixels)
    triage = load_triage(store, key)
    entry = triage.frames.setdefault(key.frame, FrameTriage())
    previous = entry.rejected.get(digest)
    entry.accepted.discard(digest)
    entry.rejected[digest] = Rejection(reason.strip(), date or today())
    changed = previous is None or previous.reason != reason.strip()
    if changed:
        save_triage(triage)
    return Applied(key, digest, triage.path, None, changed)


# How much of a session's run id a printed command names: unique among the runs one results folder keeps, and
# short enough to read. `zbench goldens accept --run` takes any unique prefix of RUN_ID_MIN or more characters.
RUN_ID_SHOWN = 12
RUN_ID_MIN = 8


def triage_command(action: str, results: Path | str, device: str, scene_id: str, frame: int,
                   run_id: str | None = None) -> str:
    """The command that accepts (or rejects) one frame's capture of a session. With the session's `run_id` it
    names the session, not only its results folder: the next session replaces what the folder holds, and
    `--run` then finds this one's files in the run archive (results/runs/NNNN)."""
    import shlex

    command = (f"zbench goldens {action} {shlex.quote(str(results))}"
               + (f" --run {run_id[:RUN_ID_SHOWN]}" if run_id else "")
               + f" --device {shlex.quote(device)} --scene {shlex.quote(scene_id)} --frame {frame}")
    return command + (" --reason 'WHAT IS WRONG'" if action == "reject" else "")


def archive_note(results: Path, archive_off: str | None) -> str | None:
    """How long a session's triage commands work when it keeps no run archive (`archive_off`: why), else None."""
    if archive_off is None:
        return None
    return (f"no run archive: {archive_off}; these work until the next session writes into {results}: keep a copy "
            "of the folder to triage later, or run with --zbench-keep-runs above 0")


def triage_hint(accept_command: str, reject_command: str, note: str | None) -> str:
    """The lines a failure message gives an untriaged capture: its commands, and `archive_note`'s note."""
    hint = f"\n  accept this image: {accept_command}\n  or reject it: {reject_command}"
    return hint + (f"\n  ({note})" if note else "")
