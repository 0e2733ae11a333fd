"""The runner kit's portability (native/kit/, docs/native-runner.md "Platforms"): the portable core reads no
/proc or /sys and calls no clock of its own, nothing in the kit ends the process (checked in the source and in
the compiled objects' undefined symbols), out of memory ends a real run with exit 1 and an `error` issue in
result.json, kit.mk picks the platform layer from the compiler's target, and the armhf build is for a
Cortex-A9 without NEON. The Darwin builds are ci/kit-platforms.sh's."""

from __future__ import annotations

import json
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from parts import require

from pytest_zbench.protocol import parse_probe_output, read_frames_csv, read_result_json

REPO = Path(__file__).resolve().parents[2]
KIT = REPO / "native" / "kit"
CORE = ("zbench_kit.c", "zjson.c")
# Calls that end the process from inside a library: exit and its kin, abort (assert's failure path), and the
# BSD err() family, which exits.
ENDING = {"exit", "_exit", "_Exit", "quick_exit", "abort", "__assert_fail", "err", "errx", "verr", "verrx"}


def _make(*args: str, cc: str | None = None) -> subprocess.CompletedProcess[str]:
    require(shutil.which("make") is not None and shutil.which("cc") is not None, "make and a C compiler")
    extra = [f"CC={cc}"] if cc else []
    return subprocess.run(["make", "-s", "-C", str(REPO / "native"), *args, *extra], capture_output=True, text=True,
                          timeout=300)


def _kit_sources() -> list[Path]:
    return sorted(p for p in KIT.iterdir() if p.suffix in (".c", ".h"))


def _code(path: Path) -> str:
    """The file without its comments (which may name what the code must not do), line numbers kept."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), path.read_text(), flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def test_no_exit_is_called_anywhere_in_the_kit():
    call = re.compile(r"\b(exit|_exit|_Exit|quick_exit|abort)\s*\(")  # the err() family: the symbols' check
    found = [f"{p.name}:{n}: {line.strip()}" for p in _kit_sources()
             for n, line in enumerate(_code(p).splitlines(), 1) if call.search(line)]
    assert found == []


def test_the_portable_core_reads_no_proc_or_sys_and_calls_no_clock_of_its_own():
    for name in CORE:
        text = _code(KIT / name)
        for needle in ("/proc", "/sys/", "CLOCK_BOOTTIME", "clock_nanosleep", "clock_gettime", "opendir",
                       "mach_absolute_time", "__linux__", "__APPLE__", "__ANDROID__"):
            assert needle not in text, f"{name} mentions {needle}: that belongs in a platform file"


def _undefined(objects: list[Path]) -> dict[str, set[str]]:
    require(shutil.which("nm") is not None, "nm (binutils)")
    out = {}
    for o in objects:
        done = subprocess.run(["nm", "-u", str(o)], capture_output=True, text=True, check=True)
        out[o.name] = {line.split()[-1] for line in done.stdout.splitlines() if line.strip()}
    return out


def test_the_compiled_kit_references_no_process_ending_call_and_its_core_no_clock(tmp_path):
    """What the compiler made of the kit, macros and inline functions included: no object calls exit or its
    kin, and the core's objects reach clocks, sleeps and directories only through the platform layer."""
    done = _make("kit-objects", f"OUT={tmp_path}")
    assert done.returncode == 0, done.stderr
    objects = sorted((tmp_path / "kit").glob("*.o"))
    assert {o.name for o in objects} == {"zbench_kit.o", "zjson.o", "platform_linux.o", "platform_procfs.o"}
    undefined = _undefined(objects)
    assert {name: sorted(syms & ENDING) for name, syms in undefined.items() if syms & ENDING} == {}
    for name in ("zbench_kit.o", "zjson.o"):
        assert not undefined[name] & {"clock_gettime", "clock_nanosleep", "nanosleep", "opendir", "readdir"}, name
    assert "clock_nanosleep" in undefined["platform_procfs.o"]  # the checks above look at real symbols


@pytest.mark.parametrize(("variables", "platform"), [
    ({}, "linux"),
    ({"CC": "arm-linux-gnueabihf-gcc"}, "linux"),
    ({"KIT_PLATFORM": "android"}, "android"),
    ({"CC": "{zig} -target aarch64-macos"}, "darwin"),
    ({"CC": "{zig} -target aarch64-ios"}, "darwin"),
])
def test_kit_mk_picks_the_platform_layer_from_the_compilers_target(tmp_path, variables, platform):
    """A runner's Makefile includes kit.mk and compiles $(KIT_SRC): the platform files follow its CC."""
    zig = f"{sys.executable} -m ziglang cc"
    if any("{zig}" in v for v in variables.values()):
        done = subprocess.run([sys.executable, "-c", "import ziglang"], capture_output=True)
        require(done.returncode == 0, "PyPI's ziglang (the [test] extra)")
    if variables.get("CC", "").startswith("arm-"):
        require(shutil.which("arm-linux-gnueabihf-gcc") is not None, "arm-linux-gnueabihf-gcc")
    makefile = tmp_path / "runner.mk"
    makefile.write_text(f"include {KIT}/kit.mk\nshow:\n\t@echo $(KIT_PLATFORM) $(notdir $(KIT_SRC))\n")
    args = [f"{k}={v.format(zig=zig)}" for k, v in variables.items()]
    done = subprocess.run(["make", "-s", "-f", str(makefile), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    expected = {"linux": "platform_linux.c platform_procfs.c", "android": "platform_android.c platform_procfs.c",
                "darwin": "platform_darwin.c"}[platform]
    assert done.stdout.split() == [platform, *"zbench_kit.c zjson.c".split(), *expected.split()]
    bad = subprocess.run(["make", "-s", "-f", str(makefile), "KIT_PLATFORM=beos"], capture_output=True, text=True)
    assert bad.returncode != 0 and "KIT_PLATFORM=beos is not one of linux, android, darwin" in bad.stderr


@pytest.fixture(scope="module")
def null_engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("null")
    done = _make("bench", f"OUT={out}")
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    return out / "zbench-kit-null"


def _job(tmp_path: Path, padding: int = 0, **changes: object) -> Path:
    job: dict[str, object] = {
        "protocol": 1, "backend": "null", "mode": "uncapped", "refresh_hz": 60.0, "warmup_frames": 1, "frames": 3,
        "capture": [], "seed": 1, "complexity": None,
        "scene": {"id": "t", "params": {}, "width": 4, "height": 4, "features": ["rect"], "ops": []}}
    job.update(changes)
    path = tmp_path / "job.json"
    with path.open("w") as f:
        text = json.dumps(job)
        f.write(text[:-1])
        for _ in range(padding >> 20):
            f.write(" " * (1 << 20))  # whitespace: still the same valid job, only larger
        f.write("}")
    return path


LIMIT = 64 << 20  # address space: the runner and libc fit, the job or the frames' rows do not


def _run_limited(runner: Path, job: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    done = subprocess.run([str(runner), "run", str(job), str(out)], capture_output=True, text=True, timeout=120,
                          preexec_fn=limit)
    return done, out


@pytest.mark.parametrize(("case", "what"), [
    ("job", "out of memory reading"),  # the job's text: the kit's growable buffer (zk_buf) runs out
    ("rows", "out of memory for 100000001 rows"),  # the frame loop's rows
])
def test_out_of_memory_ends_the_run_with_exit_1_and_an_error_issue(null_engine, tmp_path, case, what):
    """A real allocation failure, under an address-space limit: the kit returns the error to its caller, which
    writes result.json with an `error` issue and exits 1; the process is not ended from inside the kit."""
    fits, _ = _run_limited(null_engine, _job(tmp_path), tmp_path)
    assert fits.returncode == 0, fits.stderr  # the limit leaves room for an ordinary run
    job = _job(tmp_path, padding=96 << 20) if case == "job" else _job(tmp_path, frames=100_000_000)
    done, out = _run_limited(null_engine, job, tmp_path)
    assert done.returncode == 1, done.stderr
    assert what in done.stderr
    result = read_result_json(out / "result.json")
    assert [i.kind for i in result.issues] == ["error"] and what in result.issues[0].detail
    assert result.backend == "null" and result.extra["frames_rendered"] == 0
    if case == "rows":  # the frame loop had begun: frames.csv is there, with its header and no row
        assert read_frames_csv(out / "frames.csv").rows == []


def test_the_armhf_build_is_for_a_cortex_a9_without_neon():
    """ARCH=armhf (ci/native-devices.sh builds it): VFPv3-D16 and no Advanced SIMD in the binary's ARM
    attributes, and the flags in its probe's toolchain."""
    binary = REPO / "build" / "native" / "armhf" / "zbench-gles2"
    require(binary.is_file(), "the armhf native runner (bash ci/native-devices.sh)")
    require(shutil.which("readelf") is not None, "readelf (binutils)")
    attributes = subprocess.run(["readelf", "-A", str(binary)], capture_output=True, text=True, check=True).stdout
    assert "Tag_FP_arch: VFPv3-D16" in attributes and "Tag_CPU_arch: v7" in attributes
    assert "Tag_Advanced_SIMD_arch" not in attributes, attributes
    probe = subprocess.run([str(REPO / "ci" / "native-devices.sh"), "runner", "armhf", "probe"], capture_output=True,
                           text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr
    toolchain = json.loads(probe.stdout)["toolchain"]
    assert "-mcpu=cortex-a9 -mfpu=vfpv3-d16 -mfloat-abi=hard" in toolchain["flags"]
    assert parse_probe_output(probe.stdout).machine.arch.startswith("arm")
