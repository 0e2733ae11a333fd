"""`zbench goldens accept|reject RESULTS`: apply a triage choice to captures of a session without running it
again. RESULTS is a results folder (or its run.json), the session's own or a CI artifact unpacked; its
run.json says which frame of which scene on which device was untriaged, in which golden set, and where the
capture is. docs/goldens.md, "Triage".

Nothing outside two folders is read or written: captures only inside RESULTS, goldens and triage files only
inside the golden store (scene ids and set names are validated by make_key, folders resolved by GoldenStore).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ZbenchError
from .store import GoldenError, GoldenKey, GoldenStore, load_png, make_key, pixel_digest
from .tolerance import SOFTWARE
from .triage import RUN_ID_MIN, RUN_ID_SHOWN, Applied, accept, reject, triage_command

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_GOLDENS = Path("goldens")  # the plugin's default too (settings.py, --zbench-goldens)


class ReviewError(ZbenchError):
    """A results folder or a choice that cannot be applied; the message names the file or key and what to do."""


@dataclass(frozen=True)
class Candidate:
    device: str
    scene: str
    frame: int
    key: GoldenKey
    capture: Path
    digest: str | None  # as run.json recorded it
    triage: str | None


def add_commands(commands: Any) -> None:
    goldens = commands.add_parser(
        "goldens", help="accept or reject a session's golden captures (the triage in goldens/)",
        description="Record a session's captures in the golden triage (goldens/<backend>/<set>/<scene>/"
                    "triage.yaml) without running it again: accept (the image passes from now on; it becomes the "
                    "golden PNG where there is none) or reject (the image fails at once with the reason). RESULTS "
                    "is the session's results folder or a CI artifact of one. docs/goldens.md, \"Triage\".")
    goldens.add_argument("action", choices=("accept", "reject"), help="accept or reject")
    goldens.add_argument("results", metavar="RESULTS",
                         help="a results folder (with run.json), its run.json, or a CI artifact's zip of one")
    goldens.add_argument("--run", dest="run_id", metavar="ID",  # `run` is the subcommand's function (cli.py)
                         help="the session of this run id (run.json's run_id, or a unique prefix of it): RESULTS' "
                              "latest run, or one of its run archive (RESULTS/runs/NNNN) once a later session has "
                              "replaced it (default: RESULTS' latest run, whichever it is)")
    goldens.add_argument("--scene", action="append", metavar="ID", help="this scene id (repeatable)")
    goldens.add_argument("--frame", type=int, action="append", metavar="N", help="this captured frame (repeatable; "
                                                                              "default: every frame of the scene "
                                                                              "with a capture to take)")
    goldens.add_argument("--device", action="append", metavar="NAME",
                         help="this device of the session (repeatable; default: every device of the session)")
    goldens.add_argument("--all", action="store_true",
                         help="every untriaged capture of the session (instead of naming scenes)")
    goldens.add_argument("--reason", metavar="TEXT", help="why the image is wrong (required by reject)")
    goldens.add_argument("--replace", action="store_true",
                         help="accept: also make the image the golden PNG, the reference of tolerance matching "
                              "(default: only where there is none)")
    goldens.add_argument("--goldens", metavar="DIR",
                         help="the golden folder, created by the first accept or reject when it does not exist "
                              "(default: goldens, in a project's root: a folder with scenes/ or the inventory)")
    goldens.add_argument("--devices", default="devices.yaml", metavar="PATH",
                         help="the inventory, to check the session's device classes against when it exists "
                              "(default: devices.yaml)")
    goldens.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (ReviewError, GoldenError) as exc:
        print(f"zbench goldens {args.action}: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    if not args.all and not args.scene:
        raise ReviewError("name the scene(s) with --scene ID (and --frame N, --device NAME), or take every "
                          "untriaged capture of the session with --all")
    if args.action == "reject" and not (args.reason or "").strip():
        raise ReviewError("reject needs --reason TEXT: it is what the failing test will say")
    with contextlib.ExitStack() as stack:
        source = Path(args.results)
        if source.is_file() and source.suffix == ".zip":  # a CI artifact as GitHub serves it
            source = unpack_artifact(source, Path(stack.enter_context(tempfile.TemporaryDirectory())))
        return _apply(args, source)


def _apply(args: argparse.Namespace, source: Path) -> int:
    results, document = read_results(source)
    if args.run_id is not None:
        results, document = select_run(results, document, args.run_id)
    store = GoldenStore(args.goldens or DEFAULT_GOLDENS)
    created = _needs_store(store.root, explicit=args.goldens is not None, inventory=Path(args.devices))
    inventory = _inventory(Path(args.devices))
    candidates = list(candidates_of(results, document, inventory, devices=args.device, scenes=args.scene,
                                    frames=args.frame, only_untriaged=args.all))
    if not candidates:
        raise ReviewError(f"{results / 'run.json'}: no capture matches"
                          + (f" --scene {' '.join(args.scene)}" if args.scene else "")
                          + (f" --frame {' '.join(map(str, args.frame))}" if args.frame else "")
                          + (f" --device {' '.join(args.device)}" if args.device else "")
                          + "; only frames that failed, had no golden or were rejected have a capture to take "
                            "(run.json correctness.frames[].artifacts.actual)")
    if args.all:
        # --all takes untriaged captures only: a rejection is someone's judgement, undone only by naming the
        # image (an accept by --scene overrides it, docs/goldens.md "Triage").
        for candidate in (c for c in candidates if c.triage == "rejected"):
            print(_skipped(args, candidate))
        candidates = [c for c in candidates if c.triage != "rejected"]
        if not candidates:
            return EXIT_FAILED
    if created:  # only now that there is something to record: a refusal above leaves no folder behind
        store.root.mkdir()
        print(f"created {store.root}, the golden store (docs/goldens.md, \"Store layout\"): this project had none")
    for candidate in candidates:
        pixels = load_png(candidate.capture)
        digest = pixel_digest(pixels)
        if candidate.digest is not None and digest != candidate.digest:
            raise ReviewError(f"{candidate.capture}: its pixels are not the ones the session judged (digest "
                              f"{digest[:12]}, run.json says {candidate.digest[:12]}); take the results folder as "
                              "the session left it")
        applied = (accept(store, candidate.key, pixels, replace=args.replace) if args.action == "accept" else
                   reject(store, candidate.key, pixels, args.reason))
        print(_line(args.action, candidate, applied))
    print(f"review and commit the triage with the goldens: git status -- {store.root}")
    return EXIT_OK


def _line(action: str, candidate: Candidate, applied: Applied) -> str:
    what = f"{candidate.scene} frame {candidate.frame} on {candidate.device} ({applied.digest[:12]})"
    done = "accepted" if action == "accept" else "rejected"
    line = f"{done}: {what} in {applied.triage_file}" if applied.changed else f"already {done}: {what}"
    if applied.golden_written is not None:
        line += f"; golden written to {applied.golden_written}"
    return line


def _needs_store(root: Path, *, explicit: bool, inventory: Path) -> bool:
    """Whether the golden store's folder is still to be created (the project's first accept or reject). The default
    folder is created only in a project's root, one with scenes/ or the inventory: run from anywhere else, the
    images would land in a golden store no session reads. One folder, never a chain of them: a --goldens DIR whose
    parent is missing is more likely a typo than a new layout."""
    if root.is_dir():
        return False
    if root.exists() or root.is_symlink():
        raise ReviewError(f"{root} is not a folder; give --goldens the project's golden folder")
    parent = root.absolute().parent
    if not parent.is_dir():
        raise ReviewError(f"{root}: its folder {parent} does not exist; give --goldens DIR inside an existing folder")
    if not explicit and not ((parent / "scenes").is_dir() or inventory.is_file()):
        raise ReviewError(f"{root} does not exist, and {parent} is no project's root (no scenes/ folder, no "
                          f"{inventory}); run from the project's root, or give --goldens DIR (created if missing)")
    return True


def _skipped(args: argparse.Namespace, candidate: Candidate) -> str:
    """The line of a rejected capture --all leaves alone: why, and the command that does take it."""
    what = f"{candidate.scene} frame {candidate.frame} on {candidate.device}"
    if candidate.digest:
        what += f" ({candidate.digest[:12]})"
    command = triage_command(args.action, args.results, candidate.device, candidate.scene, candidate.frame,
                             args.run_id)
    if args.action == "reject":
        return f"already rejected: {what}; to give another reason: {command}"
    return (f"skipped: {what} is rejected, and --all takes untriaged captures only; to accept it over its "
            f"rejection: {command}")


def unpack_artifact(archive: Path, into: Path) -> Path:
    """Unpack a zip (a downloaded CI artifact) into `into`, refusing any member that would land outside it; the
    folder holding run.json (the top, or the one folder the zip wraps it in)."""
    import zipfile

    try:
        with zipfile.ZipFile(archive) as zipped:
            root = into.resolve()
            for member in zipped.namelist():
                if not (root / member).resolve().is_relative_to(root):
                    raise ReviewError(f"{archive}: member {member!r} would be written outside the folder it is "
                                      "unpacked into; not a CI artifact of pytest-zbench")
            zipped.extractall(root)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ReviewError(f"{archive}: cannot be unpacked as a zip ({exc})") from exc
    found = sorted(root.glob("run.json")) or sorted(root.glob("*/run.json"))
    if len(found) != 1:
        raise ReviewError(f"{archive}: {'no' if not found else 'more than one'} run.json at its top; give the "
                          "artifact of one session, or unpack it and give the folder")
    return found[0].parent


def read_results(path: Path) -> tuple[Path, dict[str, Any]]:
    """The results folder and its run.json."""
    run_json = path if path.is_file() else path / "run.json"
    if not run_json.is_file():
        raise ReviewError(f"{path}: no run.json there; give a results folder (zbench-results, or a CI artifact "
                          "unpacked) or its run.json")
    try:
        document = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReviewError(f"{run_json}: cannot be read as JSON ({exc})") from exc
    if not isinstance(document, dict) or not isinstance(document.get("scenes"), list):
        raise ReviewError(f"{run_json}: not a run.json of pytest-zbench (no `scenes` list)")
    return run_json.parent.resolve(), document


def select_run(results: Path, document: dict[str, Any], run: str) -> tuple[Path, dict[str, Any]]:
    """The results folder and run.json of run `run`: `results` itself when its run.json is that run's, else the
    folder of its run archive that holds it (docs/report.md, "Run archive"). A session's printed triage commands
    name its run, so that they still find its captures after the next session has replaced `results`."""
    from ..run_archive import RUNS_DIR, run_folders

    if len(run) < RUN_ID_MIN:
        raise ReviewError(f"--run {run}: give at least {RUN_ID_MIN} characters of the run id (run.json's run_id)")
    if str(document.get("run_id") or "").startswith(run):
        return results, document
    archive = results / RUNS_DIR
    for folder in reversed(run_folders(results)):
        try:
            archived, archived_document = read_results(folder)
        except ReviewError:
            continue  # a run folder without a readable run.json holds no capture to take either
        if str(archived_document.get("run_id") or "").startswith(run):
            return archived, archived_document
    latest = str(document.get("run_id") or "?")[:RUN_ID_SHOWN]
    kept = len(run_folders(results))
    raise ReviewError(f"{results}: run {run} is not its latest run (that is {latest}) nor in its run archive "
                      f"{archive} ({kept} run(s) kept): the archive was off when it ran (--zbench-keep-runs=0), or "
                      "has pruned it since (--zbench-keep-runs=N keeps the newest N). `zbench runs --results "
                      f"{results}` lists the runs kept; a CI artifact of the run holds it too")


def _inventory(path: Path) -> Mapping[str, Any] | None:
    """The project's devices by name (backend, device_class), or None without an inventory."""
    if not path.is_file():
        return None
    from ..inventory import load_inventory

    return load_inventory(path).devices


def candidates_of(results: Path, document: Mapping[str, Any], inventory: Mapping[str, Any] | None, *,
                  devices: list[str] | None, scenes: list[str] | None, frames: list[int] | None,
                  only_untriaged: bool) -> Iterator[Candidate]:
    run_json = results / "run.json"
    sections = document.get("devices") or {}
    for entry in document["scenes"]:
        device, scene = str(entry.get("device")), str(entry.get("id"))
        if (devices and device not in devices) or (scenes and scene not in scenes):
            continue
        for index, frame in enumerate((entry.get("correctness") or {}).get("frames") or []):
            where = f"{run_json}: scene {scene} on {device}, correctness.frames[{index}]"
            if frames and frame.get("frame") not in frames:
                continue
            if only_untriaged and frame.get("triage") not in ("untriaged", "rejected"):
                continue  # a rejected one is kept for `_apply` to say why --all leaves it
            actual = (frame.get("artifacts") or {}).get("actual")
            if not actual or frame.get("status") not in ("failed", "missing"):
                continue
            backend, _, golden_set = str(frame.get("set") or "").partition("/")
            try:
                key = make_key(backend, golden_set, scene, int(frame["frame"]))
            except (GoldenError, KeyError, TypeError, ValueError) as exc:
                raise ReviewError(f"{where}: {exc}") from exc
            _check_device_class(where, key, device, sections.get(device) or {}, inventory)
            capture = (results / str(actual)).resolve()
            if not capture.is_relative_to(results):
                raise ReviewError(f"{where}: the capture {actual} is outside the results folder {results}; "
                                  "captures are only taken from inside it")
            if not capture.is_file():
                raise ReviewError(f"{where}: the capture {capture} is not there; a CI artifact must hold the "
                                  "session's whole results folder")
            yield Candidate(device, scene, key.frame, key, capture, frame.get("digest"), frame.get("triage"))


def _check_device_class(where: str, key: GoldenKey, device: str, section: Mapping[str, Any],
                        inventory: Mapping[str, Any] | None) -> None:
    """The set a frame is recorded for must be its device's: the device class (GPU backends) or the CPU
    architecture (software) that run.json records for the device, and the class this project's inventory
    gives the device of that name. Else the images would land in another device class's goldens."""
    recorded = (section.get("device") or {}) if isinstance(section, Mapping) else {}
    backend = (section.get("gpu") or {}).get("backend") if isinstance(section, Mapping) else None
    if key.backend == SOFTWARE:
        cpu = recorded.get("cpu") or {}
        own = cpu.get("family") if isinstance(cpu, Mapping) else None
        what = "CPU architecture"
    else:
        own = recorded.get("device_class")
        what = "device class"
    if (backend is not None and backend != key.backend) or (own is not None and own != key.device_class):
        raise ReviewError(f"{where}: recorded for set {key.backend}/{key.device_class}, but run.json says device "
                          f"{device} is {backend}/{own}; this results folder does not hold what it claims")
    spec = (inventory or {}).get(device)
    if spec is None or key.backend == SOFTWARE and spec.backend == SOFTWARE:
        return  # the software set follows the runner's architecture, which only its probe tells
    if spec.backend != key.backend or spec.device_class != key.device_class:
        raise ReviewError(f"{where}: the session ran device {device} as {key.backend}/{key.device_class} ({what} "
                          f"{key.device_class}), but this project's inventory has {device} as "
                          f"{spec.backend}/{spec.device_class}: these images belong to another device class. "
                          "Accept them in a checkout whose devices.yaml matches the session's, or fix devices.yaml")
