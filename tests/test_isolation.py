"""Isolation checks on plain run.json scene entries (pytest_zbench/host/verdicts/isolation.py)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_zbench.host.verdicts.isolation import (
    MIN_ELASTICITY,
    RHO_THRESHOLD,
    check_isolation,
    spearman,
    terminal_lines,
    theil_sen_slope,
)


def entry(scene: str, sweep: str, params: dict[str, Any], gpu: list[float] | None, cpu: list[float], *,
          device: str = "dev", first: list[float] | None = None, **extra: Any) -> dict[str, Any]:
    runs = []
    for k, cpu_ms in enumerate(cpu):
        run: dict[str, Any] = {"cpu_ms": {"p50": cpu_ms}, "partial": False,
                               "first_frame_ms": first[k] if first else 50.0}
        if gpu is not None:
            run["gpu_ms"] = {"p50": gpu[k]}
        runs.append(run)
    return {"id": scene, "sweep": sweep, "family": scene.split(".")[0], "device": device, "params": params,
            "gpu_valid": True if gpu is not None else None, "per_run": runs, "skipped": None, **extra}


def fill(kind: str, gpu: dict[int, list[float]], cpu: dict[int, list[float]], **kw: Any) -> list[dict[str, Any]]:
    return [entry(f"fill.{kind}.x{n}", f"fill.{kind}.x{{layers}}", {"layers": n}, gpu.get(n), cpu[n], **kw)
            for n in cpu]


def test_spearman_with_ties_and_constant_sides() -> None:
    assert spearman([1, 2, 3], [10, 20, 30]) == 1.0
    assert spearman([1, 2, 3], [30, 20, 10]) == -1.0
    # Two values of the dimension, two launches each, cleanly separated: ties keep rho below 1.
    rho = spearman([1, 1, 2, 2], [1.0, 2.0, 3.0, 4.0])
    assert rho is not None and 0.89 < rho < 0.9
    assert spearman([1, 2, 3], [5, 5, 5]) is None
    assert spearman([1], [1]) is None


def test_a_culled_family_is_flagged_and_a_scaling_one_is_not() -> None:
    # The shape measured on llvmpipe: opaque overdraw costs microseconds of GPU time at any depth (rising a
    # little, in rank), translucent layers cost milliseconds each.
    opaque = fill("opaque", {1: [0.0034, 0.0036], 2: [0.0041, 0.0051], 4: [0.0055, 0.0137], 8: [0.0056, 0.0051]},
                  {1: [0.35, 0.33], 2: [0.28, 0.41], 4: [0.44, 0.42], 8: [0.43, 0.43]})
    alpha = fill("alpha", {1: [0.0045, 0.006], 2: [4.7, 1.68], 4: [1.47, 12.8], 8: [24.9, 16.5]},
                 {1: [0.39, 0.5], 2: [0.53, 0.43], 4: [0.46, 0.37], 8: [0.52, 0.5]})
    found = {i.family: i for i in check_isolation(opaque + alpha)}
    assert set(found) == {"fill.opaque.x{layers}", "fill.alpha.x{layers}"}
    culled, scaling = found["fill.opaque.x{layers}"], found["fill.alpha.x{layers}"]
    assert (culled.verdict, culled.likely_cause, culled.metric) == ("not_scaling", "culled", "gpu_ms")
    assert culled.rho is not None and culled.rho >= RHO_THRESHOLD  # ranks rise: the rise is what is too small
    assert (scaling.verdict, scaling.likely_cause) == ("scales", None)
    assert scaling.values == (1, 2, 4, 8) and scaling.launches == 8
    lines = terminal_lines([i.to_dict() for i in check_isolation(opaque + alpha)])
    assert len(lines) == 1 and lines[0].startswith("isolation: fill.opaque.x{layers} on dev does not scale with "
                                                   "layers, likely culled")


def test_noise_without_a_trend_does_not_scale_and_is_a_fixed_cost() -> None:
    flat = fill("alpha", {}, {1: [2.0, 2.6], 2: [2.5, 2.1], 4: [2.4, 2.2], 8: [2.3, 2.2]})
    (found,) = check_isolation(flat)
    assert (found.metric, found.verdict, found.likely_cause) == ("cpu_ms", "not_scaling", "fixed_cost")
    assert found.elasticity is not None and abs(found.elasticity) < 0.2
    assert "rho below" in found.reason and "layers accounts for" in found.reason


def test_a_sweep_that_rises_in_rank_by_a_residue_of_setup_cost_does_not_scale() -> None:
    # The shape measured on llvmpipe timed by the finish bracket on a quiet machine: each opaque layer still
    # costs its binning (about 0.08 ms on a 1.5 ms frame), in rank order; each translucent one 0.6 ms.
    opaque = fill("opaque", {1: [1.55, 1.62, 1.6], 2: [1.66, 1.7, 1.68], 4: [1.83, 1.85, 1.9], 8: [2.15, 2.2, 2.2]},
                  {n: [0.3, 0.3, 0.3] for n in (1, 2, 4, 8)})
    alpha = fill("alpha", {1: [1.9, 1.95, 1.85], 2: [2.5, 2.45, 2.6], 4: [3.7, 3.6, 3.8], 8: [6.2, 6.1, 6.3]},
                 {n: [0.3, 0.3, 0.3] for n in (1, 2, 4, 8)})
    found = {i.family: i for i in check_isolation(opaque + alpha)}
    residue, scaling = found["fill.opaque.x{layers}"], found["fill.alpha.x{layers}"]
    assert residue.rho is not None and residue.rho >= RHO_THRESHOLD and residue.rise_ms is not None
    assert residue.elasticity is not None and residue.elasticity < MIN_ELASTICITY
    assert (residue.verdict, residue.likely_cause) == ("not_scaling", "fixed_cost")
    assert "culled or fast-pathed" in residue.reason
    assert scaling.verdict == "scales" and scaling.elasticity is not None and scaling.elasticity > 0.7
    assert terminal_lines([i.to_dict() for i in check_isolation(opaque + alpha)]) == [
        f"isolation: fill.opaque.x{{layers}} on dev does not scale with layers, likely fixed cost: {residue.reason}"]


def test_the_slope_is_the_median_of_pairwise_slopes_so_one_slowed_launch_does_not_move_it() -> None:
    points = [(1.0, 1.0), (2.0, 2.0), (4.0, 4.0), (8.0, 8.0)]
    assert theil_sen_slope(points) == 1.0
    assert theil_sen_slope([*points, (1.0, 40.0)]) == 1.0
    assert theil_sen_slope([(1.0, 1.0), (1.0, 2.0)]) is None


def test_a_gpu_flat_sweep_whose_cpu_time_rises_is_bound_elsewhere() -> None:
    entries = fill("alpha", {1: [1.0, 1.1], 2: [1.05, 1.0], 4: [1.1, 1.0], 8: [1.0, 1.05]},
                   {1: [1.0, 1.1], 2: [2.0, 2.1], 4: [4.0, 4.2], 8: [8.0, 8.3]})
    (found,) = check_isolation(entries)
    assert (found.metric, found.verdict, found.likely_cause) == ("gpu_ms", "not_scaling", "bound_elsewhere")


def test_a_gpu_idle_sweep_whose_cpu_time_rises_is_bound_elsewhere_not_culled() -> None:
    # Text on llvmpipe: the atlas draws cost the GPU nothing measurable, the CPU's layout scales.
    entries = [entry(f"textscroll.lines{n}", "textscroll.lines{lines}", {"lines": n}, gpu, cpu)
               for n, gpu, cpu in ((8, [0.0009, 0.001], [0.85, 0.9]), (16, [0.0008, 0.001], [1.2, 1.22]),
                                   (32, [0.0007, 0.0008], [1.3, 1.35]))]
    (found,) = check_isolation(entries)
    assert (found.metric, found.verdict, found.likely_cause) == ("gpu_ms", "not_scaling", "bound_elsewhere")


def test_a_sweep_whose_first_frame_alone_rises_is_cached() -> None:
    entries = [entry(f"texture.once.s{s}", "texture.once.s{size}", {"size": s}, None, cpu, first=first)
               for s, cpu, first in ((256, [1.0, 1.1, 1.0], [10.0, 11.0, 10.5]),
                                     (1024, [1.05, 1.0, 1.1], [60.0, 62.0, 58.0]))]
    (found,) = check_isolation(entries)
    assert (found.verdict, found.likely_cause) == ("not_scaling", "cached")


def test_product_sweeps_are_judged_per_value_of_the_other_params_and_names_are_not_dimensions() -> None:
    entries = [entry(f"texture.{u}.s{s}", "texture.{upload}.s{size}", {"upload": u, "size": s}, None,
                     [s / 100, s / 100 + 0.1])
               for u in ("once", "every_frame") for s in (256, 1024)]
    found = check_isolation(entries)
    assert [(i.family, i.dimension, i.verdict) for i in found] == [
        ("texture.every_frame.s{size}", "size", "scales"), ("texture.once.s{size}", "size", "scales")]


def test_too_few_launches_are_inconclusive_and_skipped_or_unswept_scenes_are_left_out() -> None:
    few = [entry(f"shadow.blur{b}", "shadow.blur{blur}", {"blur": b}, None, [float(b)]) for b in (2, 8)]
    (found,) = check_isolation(few)
    assert found.verdict == "inconclusive" and found.rho is None
    # A param that moves with the dimension but is not in the id template is not a dimension of its own.
    moving = [entry(f"drawcalls.rects.n{n}", "drawcalls.rects.n{count}", {"count": n, "columns": c}, None,
                    [n / 100, n / 100 + 0.2]) for n, c in ((1000, 40), (2500, 50))]
    assert [(i.dimension, i.verdict) for i in check_isolation(moving)] == [("count", "scales")]
    skipped = [dict(e, skipped="runner lacks op") for e in moving]
    unswept = [dict(e, sweep="drawcalls.rects") for e in moving]
    assert check_isolation(skipped) == [] and check_isolation(unswept) == []


def test_entries_are_valid_run_json() -> None:
    import jsonschema

    from pytest_zbench.host.run_record import load_schema

    validator = jsonschema.Draft202012Validator(load_schema()["properties"]["isolation"])
    isolation = [i.to_dict() for i in check_isolation(
        fill("opaque", {1: [0.003, 0.004], 8: [0.005, 0.004]}, {1: [0.3, 0.3], 8: [0.4, 0.4]}))]
    assert isolation[0]["likely_cause"] == "culled"
    assert list(validator.iter_errors(isolation)) == []
    isolation[0]["verdict"] = "fine"
    assert [e.message for e in validator.iter_errors(isolation)] == ["'fine' is not one of ['scales', "
                                                                     "'not_scaling', 'inconclusive']"]


def test_a_cpu_timed_sweep_of_an_untrusted_gpu_proves_scaling_when_it_rises_and_nothing_when_it_does_not() -> None:
    # llvmpipe with its timer query failing the check: cpu_ms is the CPU's side only (recording, binning).
    untrusted = {"gpu_valid": False}
    flat = [dict(e, **untrusted) for e in fill("opaque", {}, {1: [0.45, 0.46], 2: [0.46, 0.45], 4: [0.47, 0.46],
                                                                8: [0.46, 0.47]})]
    rising = [dict(e, **untrusted) for e in fill("alpha", {}, {1: [1.0, 1.1], 2: [2.0, 2.1], 4: [4.1, 4.0],
                                                                 8: [8.2, 8.0]})]
    found = {i.family: i for i in check_isolation(flat + rising)}
    silent, proven = found["fill.opaque.x{layers}"], found["fill.alpha.x{layers}"]
    assert (silent.metric, silent.verdict, silent.likely_cause) == ("cpu_ms", "inconclusive", None)
    assert "failed the timer check" in silent.reason and silent.rho is not None
    assert (proven.metric, proven.verdict) == ("cpu_ms", "scales")
    assert terminal_lines([i.to_dict() for i in check_isolation(flat + rising)]) == []


def test_a_weak_rise_is_a_fixed_cost_even_when_the_first_frame_rises_too() -> None:
    # A shader whose compile grows with its loop count: the first frame rises, and so do the steady ones, weakly.
    entries = [entry(f"shader.l{n}.f1", "shader.l{loops}.f1", {"loops": n}, gpu, [0.3, 0.3], first=first)
               for n, gpu, first in ((2, [1.45, 1.5], [40.0, 41.0]), (8, [1.75, 1.8], [60.0, 61.0]),
                                     (32, [2.55, 2.6], [90.0, 92.0]))]
    (found,) = check_isolation(entries)
    assert (found.verdict, found.likely_cause) == ("not_scaling", "fixed_cost")


def test_a_rise_under_a_tenth_of_the_smallest_case_does_not_scale_however_many_ms_it_is() -> None:
    # Cost proportional to the value: 100 -> 105 rises by 0.1 ms (over MIN_RISE_MS), with rank correlation 1 and
    # elasticity 1, but by 5 % of the smallest case; 100 -> 120 rises by 20 % and scales.
    def sweep(values: tuple[int, ...]) -> list[dict[str, Any]]:
        return [entry(f"blur.r{v}", "blur.r{radius}", {"radius": v}, [0.02 * v, 0.02 * v], [0.3, 0.3])
                for v in values]

    (small,) = check_isolation(sweep((100, 105)))
    assert small.rise_ms == pytest.approx(0.1) and small.rho == 1.0 and small.elasticity == pytest.approx(1.0)
    assert small.verdict == "not_scaling" and "10% of the smallest case" in small.reason
    (large,) = check_isolation(sweep((100, 120)))
    assert large.verdict == "scales"


def test_the_gpu_clock_is_used_only_when_every_case_has_a_trusted_gpu_source() -> None:
    # The GPU's time rises, the CPU's does not: the clock chosen decides the verdict.
    trusted = fill("alpha", {1: [1.0, 1.1], 2: [2.0, 2.1], 4: [4.1, 4.0], 8: [8.2, 8.0]},
                   {1: [0.3, 0.31], 2: [0.31, 0.3], 4: [0.3, 0.31], 8: [0.31, 0.3]})
    (found,) = check_isolation(trusted)
    assert (found.metric, found.verdict) == ("gpu_ms", "scales")
    one_untrusted = [dict(e, gpu_valid=False) if e["params"]["layers"] == 4 else e for e in trusted]
    one_unknown = [dict(e, gpu_valid=None) if e["params"]["layers"] == 1 else e for e in trusted]
    for entries in (one_untrusted, one_unknown):
        (found,) = check_isolation(entries)
        assert found.metric == "cpu_ms" and found.verdict != "scales"
