"""References in float64 on the CPU where the device has no float64 (issue #44 item 6): the rule
runs on the default device at the inputs' dtype, the finite differences and the primal's own
autodiff on the CPU device in float64. A CPU-only machine plays the TPU: the checker is given the
CPU device as its reference device with float64 off, as `precision` gives it on a TPU. Real JAX."""

from __future__ import annotations

import importlib.util
import sys

import pytest

jax = pytest.importorskip("jax")
numpy = pytest.importorskip("numpy")

from vjplint.record.live import _load_child, live_plan  # noqa: E402

SOURCE = '''\
import jax
import jax.numpy as jnp

SEEN = []


@jax.custom_vjp
def soft(x):
    SEEN.append(str(x.dtype))
    return jnp.log1p(jnp.exp(x))


def soft_fwd(x):
    return soft(x), x


def soft_bwd(x, g):
    return (g * jax.nn.sigmoid(x),)


soft.defvjp(soft_fwd, soft_bwd)


@jax.custom_vjp
def wrong(x):
    return jnp.sin(x)


def wrong_fwd(x):
    return wrong(x), x


def wrong_bwd(x, g):
    return (-g * jnp.cos(x),)  # WRONG: the sign


wrong.defvjp(wrong_fwd, wrong_bwd)
'''


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("reference") / "ops_reference.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("ops_reference", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ops_reference"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("ops_reference", None)


def _check(module, name, reference):
    child = _load_child()
    fun = getattr(module, name)
    plan, _row, _digest = live_plan(fun.fun, "vjp", module.__file__, fun.fun.__code__.co_firstlineno, ())
    plan.update(kind="vjp", key="ops_reference." + name)
    calls = [[numpy.array([0.3, -1.2, 2.0], numpy.float32)], [numpy.array([-0.5, 0.1, 1.5], numpy.float32)]]
    assert not jax.config.jax_enable_x64
    return child.check_live(jax, numpy, fun, plan, calls, 2, False, module, reference)


def test_the_device_choice_of_the_child_keeps_float64_on_the_cpu():
    child = _load_child()
    assert child.precision(jax, jax.devices("cpu")[0]) == (True, None, "")


def test_a_correct_rule_passes_with_its_references_in_float64_on_the_cpu(module):
    module.SEEN.clear()
    result = _check(module, "soft", jax.devices("cpu")[0])
    assert result["status"] == "verified", result
    assert result["precision"] == "float32"  # the rule at the inputs' dtype
    assert result["checked_at"] == 2
    assert "float32" in module.SEEN and "float64" in module.SEEN  # the references ran in float64
    assert not jax.config.jax_enable_x64  # the float64 context does not outlive the references


def test_without_a_reference_device_nothing_runs_in_float64(module):
    module.SEEN.clear()
    result = _check(module, "soft", None)
    assert result["status"] == "verified", result
    assert set(module.SEEN) == {"float32"}


def test_a_wrong_rule_fails_against_float64_references(module):
    result = _check(module, "wrong", jax.devices("cpu")[0])
    assert result["status"] == "failed", result
    failed = [c for c in result["checks"] if c["status"] == "failed"]
    assert failed[0]["name"] == "reverse order 1" and failed[0]["code"] == "VJP501"
    assert failed[0]["detail"].startswith("bwd cotangent for `x` differs from finite differences")


JVP_SOURCE = '''\
import jax
import jax.numpy as jnp


@jax.custom_jvp
def smooth(x):
    return jnp.sin(x) * 2.0


@smooth.defjvp
def smooth_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    first = x.at[0].get()  # a JAX array's `.at`: NumPy arrays have none
    return smooth(x), 2.0 * jnp.cos(x) * t + 0.0 * first
'''


@pytest.fixture(scope="module")
def jvp_module(tmp_path_factory):
    path = tmp_path_factory.mktemp("reference_jvp") / "ops_reference_jvp.py"
    path.write_text(JVP_SOURCE)
    spec = importlib.util.spec_from_file_location("ops_reference_jvp", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ops_reference_jvp"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("ops_reference_jvp", None)


def _check_jvp(module, reference, calls):
    child = _load_child()
    fun = module.smooth
    plan, _row, _digest = live_plan(fun.fun, "jvp", module.__file__, fun.fun.__code__.co_firstlineno, ())
    plan.update(kind="jvp", key="ops_reference_jvp.smooth")
    return child.check_live(jax, numpy, fun, plan, calls, 2, False, module, reference)


@pytest.mark.parametrize("reference", ["cpu", None])
def test_a_correct_custom_jvp_passes_every_order_with_or_without_a_reference_device(jvp_module, reference):
    """Measured on a lent TPU v5e: every custom_jvp that reached forward order 2 ended "the checker
    failed: primal and tangent arguments to jax.jvp do not match" (float64 primals on the reference
    device, float32 tangents); and recorded NumPy inputs reached the rule as NumPy arrays, which
    JAX never hands a rule under jit or grad (lineax's `_two_norm` failed on `x**ω`)."""
    calls = [[numpy.array([0.3, -1.2, 2.0], numpy.float32)], [numpy.array([-0.5, 0.1, 1.5], numpy.float32)]]
    device = jax.devices("cpu")[0] if reference else None
    result = _check_jvp(jvp_module, device, calls)
    assert result["status"] == "verified", result
    statuses = {c["name"]: c["status"] for c in result["checks"]}
    assert statuses["forward order 1"] == statuses["forward order 2"] == "passed", statuses
    assert statuses["reverse order 1"] == "passed", statuses
    assert not jax.config.jax_enable_x64


def test_float64_inputs_run_at_float32_are_not_a_narrowed_gradient(jvp_module):
    """Measured on a lent TPU v5e: numpyro's `log1mexp`, recorded at float64 values, failed "comes back
    as float32 where the project passes `x` as float64": the device has no float64, so the rule (and
    the primal's own autodiff there) ran at float32, while the float64 reference on the CPU kept the
    project's dtype. The rule's gradient is compared with the dtype the rule was run at."""
    calls = [[numpy.array([0.3, -1.2, 2.0], numpy.float64)], [numpy.array([-0.5, 0.1, 1.5], numpy.float64)]]
    result = _check_jvp(jvp_module, jax.devices("cpu")[0], calls)
    assert result["status"] == "verified", result
    statuses = {c["name"]: c["status"] for c in result["checks"]}
    assert statuses["reverse order 1"] == "passed", statuses
