"""The recorder keeps a sample of the values each custom derivative receives, not copies
(vjplint.record: distinct values, thinned to spread, the extremes checked first; issue #44)."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")  # the test extra's; the other Pythons' unit layer has none

from vjplint.record.sampling import _summary, _thin, signature_order, spread

pytestmark = pytest.mark.unit


def test_copies_of_one_value_are_one_sample_and_where_a_call_lies_is_the_mean_of_its_finite_floats():
    a, b = _summary(np, [np.array([-80.5], np.float32)]), _summary(np, [np.array([-80.5], np.float32)])
    assert a[0] == b[0] and a[1] == pytest.approx(-80.5) and a[2] == 4
    assert _summary(np, [np.array([-80.5], np.float64)])[0] != a[0]  # another dtype is another value
    assert _summary(np, [np.array([1.0, np.inf]), 3.0])[1] == pytest.approx(2.0)
    assert _summary(np, [np.array(-np.inf)])[1] is None  # nothing finite: nothing to differentiate there
    assert _summary(np, [np.zeros((0,))])[1] is None  # lineax's size-zero test: nothing to differentiate
    assert _summary(np, [float("-inf")])[1] is None and _summary(np, [float("nan"), 2.0])[1] == 2.0
    assert _summary(np, [np.array([1, 2])])[1] == 0.0  # no float at all


def test_thinning_keeps_the_extremes_and_drops_the_call_closest_to_its_neighbours():
    kept = [(v, v) for v in (-80.5, -20.5, -8.0, -2.5, -0.5, -0.45, -0.01)]
    _thin(kept)
    assert [v for v, _ in kept] == [-80.5, -20.5, -8.0, -2.5, -0.5, -0.01]
    kept = [(None, "inf"), (0.0, "a"), (1.0, "b"), (2.0, "c")]
    _thin(kept)
    assert [c for _, c in kept] == ["a", "b", "c"]


def test_spread_checks_the_extremes_first_then_between_and_leaves_out_what_has_nothing_finite():
    kept = [(float(v), v) for v in range(12)]
    assert spread(kept, 5) == [0, 11, 3, 6, 8]
    assert spread([(None, "inf"), (-0.01, "c"), (-80.5, "a"), (-2.5, "b")], 5) == ["a", "c", "b"]
    assert spread([(None, "inf")], 5) == ["inf"]


def test_real_float_signatures_come_before_complex_ones_and_more_distinct_calls_first():
    real = "PyTreeDef((*,))|float32[3]"
    complex_ = "PyTreeDef((*,))|complex128[2]"
    order = sorted([(complex_, [1, 2, 3], 9), (real, [1], 1), (real + ",float", [], 50)],
                   key=lambda item: signature_order(*item))
    assert [item[0] for item in order] == [real, complex_, real + ",float"]
