"""The floor on the between-session spread (docs/regression.md, "A floor on the between-session spread"): two
baseline sessions that agree by chance must not make one candidate session's offset an effect, while an effect
far past what the floor and the baseline's degrees of freedom allow is still found."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_zbench.regression.config import DEFAULT_BETWEEN_FLOOR
from pytest_zbench.regression.gate import GateConfig, judge
from pytest_zbench.regression.hierarchy import Session, SessionGroup, between_sessions


def launch(p50: float) -> dict:
    return {"cpu_ms": {"p50": p50, "p95": p50 * 1.3}, "gpu_ms": None, "gpu_source": None, "jank_share": 0.0}


def sessions_agreeing(launches: int, seed: int) -> list[list[dict]]:
    """Two baseline sessions whose medians agree within 0.4 %, each of `launches` launches (1 % launch spread)."""
    rng = np.random.default_rng(seed)
    out = []
    for level in (10.0, 10.04):
        values = level * np.exp(rng.normal(0.0, 0.01, launches)) if launches > 1 else np.array([level])
        values *= level / float(np.median(values))  # the session's median exactly at its level
        out.append([launch(float(v)) for v in values])
    return out


@pytest.mark.parametrize("launches", [1, 3])
def test_a_one_launch_candidate_at_1_5x_two_agreeing_sessions_is_not_regressed(launches):
    """The CI case: a quick one-launch session read 1.54x its two baseline sessions (between-session spread 0.4 %
    from 1 df) with the co-run load alike on all three. Without the floor it was `regressed`."""
    base = sessions_agreeing(launches, seed=launches)
    scene = judge(base, [launch(15.4)])
    p50 = scene.by_metric()["cpu_ms.p50"]
    assert p50.effect == pytest.approx(1.54, rel=0.01)
    assert scene.verdict != "regressed", scene.message()
    assert p50.between_df == 1
    assert p50.between_session == pytest.approx(DEFAULT_BETWEEN_FLOOR, rel=1e-9)
    assert p50.between_measured is not None and p50.between_measured < 0.005
    assert "the floor, measured" in p50.message()


@pytest.mark.parametrize("launches", [1, 3])
def test_the_same_case_without_the_floor_is_regressed(launches):
    """What the floor changes: with it off (between_floor=0), the 0.4 % estimate makes 1.54x `regressed`."""
    base = sessions_agreeing(launches, seed=launches)
    scene = judge(base, [launch(15.4)], GateConfig(between_floor=0.0))
    assert scene.verdict == "regressed", scene.message()
    assert scene.by_metric()["cpu_ms.p50"].between_measured is None


@pytest.mark.parametrize("launches", [1, 3])
def test_a_25x_burn_against_two_agreeing_sessions_is_still_regressed(launches):
    """The issue's --cpu-burn-ms 3 slowdown (25x) is past anything the floor at 1 df can explain."""
    base = sessions_agreeing(launches, seed=launches)
    scene = judge(base, [launch(250.0)])
    assert scene.verdict == "regressed", scene.message()
    p50 = scene.by_metric()["cpu_ms.p50"]
    assert p50.ci[0] > 1.15 and p50.df == pytest.approx(1.0, abs=0.5)


def test_three_agreeing_sessions_find_a_moderate_effect():
    """2 df: the t quantile falls from 31.8 to 6.96 (one-sided, alpha 0.01), so the floor of 2 % asks for about
    1.2x at most, and a 1.5x slowdown against three sessions agreeing within 0.4 % is `regressed`."""
    base = [*sessions_agreeing(3, seed=5), [launch(v) for v in (10.02, 9.95, 10.1)]]
    scene = judge(base, [launch(15.0), launch(15.1), launch(14.9)])
    assert scene.verdict == "regressed", scene.message()
    assert scene.by_metric()["cpu_ms.p50"].between_df == 2


def test_the_floor_keeps_the_estimates_degrees_of_freedom_and_a_larger_estimate():
    """between_sessions: tau2 is max(estimate, log(1 + floor)^2); df and the estimate are kept, and so is a
    spread the sessions show above the floor."""
    quiet = [Session(("m",), np.log(np.array([[v]]))) for v in (10.0, 10.04)]
    loud = [Session(("m",), np.log(np.array([[v]]))) for v in (10.0, 11.0, 9.0)]
    floored = between_sessions([SessionGroup(tuple(quiet), "quiet")], 1, floor=0.02)
    assert floored.tau2[0] == pytest.approx(math.log1p(0.02) ** 2, rel=1e-12)
    assert floored.measured_tau2[0] == pytest.approx(math.log(1.004) ** 2 / 2, rel=1e-3)
    assert floored.df[0] == 1 and floored.floored(0)
    # The floor's sampling variance at 1 df (normal theory): 2 tau2^2 / 1, no within part without launch pairs.
    assert floored.var_tau2[0] == pytest.approx(2 * floored.tau2[0] ** 2, rel=1e-9)
    above = between_sessions([SessionGroup(tuple(loud), "loud")], 1, floor=0.02)
    assert not above.floored(0) and above.tau2[0] == pytest.approx(above.measured_tau2[0])
    assert above.tau2[0] > math.log1p(0.02) ** 2


def sessions_closer_than_their_launches(seed: int, launches: int = 10) -> list[list[dict]]:
    """Three baseline sessions of `launches` launches (3 % launch spread, so a session's median varies by about
    1.2 %) whose medians agree within 0.2 %: an unbiased between-session estimate under zero."""
    rng = np.random.default_rng(seed)
    out = []
    for level in (10.0, 10.02, 9.99):
        values = level * np.exp(rng.normal(0.0, 0.03, launches))
        values *= level / float(np.median(values))
        out.append([launch(float(v)) for v in values])
    return out


def t_test_se(sessions: list[list[dict]]) -> float:
    """The t test of session statistics: the spread of the baseline's medians of log p50, (1 + 1/S) for the
    candidate's own offset."""
    stats = np.array([np.median(np.log([l["cpu_ms"]["p50"] for l in s])) for s in sessions])
    return float(stats.std(ddof=1) * math.sqrt(1 + 1 / stats.size))


def test_without_the_floor_sessions_closer_than_their_launches_are_the_t_test_of_session_statistics():
    """An estimate under zero is kept signed (BetweenSessions.pivot_tau2): the standard error is the session
    statistics' own (within the few % by which the bootstrap's and the formula's readings of the launches'
    part differ) on their 2 df, not the launches' spread with the estimate's 2 df, which cost the t test's power
    against 2-3 quiet sessions. With the floor, the floor decides."""
    base = sessions_closer_than_their_launches(seed=3)
    candidate = [launch(12.0 * v) for v in np.exp(np.random.default_rng(4).normal(0.0, 0.03, 10))]
    between = between_sessions([SessionGroup(tuple(Session.of(s, ("cpu_ms.p50",)) for s in base), "this scene")],
                               1, floor=0.0)
    assert between.unbiased_tau2[0] < 0 and between.tau2[0] == 0 and between.pivot_tau2(0) < 0
    scene = judge(base, candidate, GateConfig(between_floor=0.0))
    p50 = scene.by_metric()["cpu_ms.p50"]
    se = math.log(p50.effect) / p50.t
    assert se == pytest.approx(t_test_se(base), rel=0.15)
    launches_alone = 0.03 * math.sqrt(1.43 / 10 * (1 + 1 / 3))  # what truncating at zero left it at, about 1.2 %
    assert se < launches_alone / 3
    assert p50.df == pytest.approx(2.0, abs=0.5)  # 2, and a little more for the candidate's own launches
    assert scene.verdict == "regressed", scene.message()
    floored = judge(base, candidate).by_metric()["cpu_ms.p50"]
    assert floored.between_measured is not None and floored.verdict == "inconclusive", floored.message()


def test_a_negative_estimate_with_fewer_candidate_launches_keeps_their_extra_noise():
    """A one-launch candidate carries more launch noise than a baseline session's median of 10: that part is
    measured on many df and is not scaled down with the sessions' agreement."""
    base = sessions_closer_than_their_launches(seed=5)
    p50 = judge(base, [launch(12.0)], GateConfig(between_floor=0.0)).by_metric()["cpu_ms.p50"]
    se = math.log(p50.effect) / p50.t
    # One launch's own spread, 3 % (estimated from 40 launches: within 30 %), against 0.1-0.2 % for the sessions.
    assert se > 0.7 * 0.03 and se > 10 * t_test_se(base)
    assert p50.df > 2.0


def test_the_floor_is_a_validated_setting():
    assert GateConfig().between_floor == DEFAULT_BETWEEN_FLOOR == 0.02
    with pytest.raises(ValueError, match="between_floor"):
        GateConfig(between_floor=-0.01)
