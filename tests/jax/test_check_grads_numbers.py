"""A rule that raises under jit(grad) or vmap(grad) only because an argument the project passes as
a Python number is traced there (neural-tangents' `_sqrt(x, tol)` with `max(tol, 1e-30)` in its
jvp rule, `tol` not in nondiff_argnums): jit and vmap hold a literal constant, so at the project's
calls it runs; check-grads says "may" (a warning) instead of failing. Passed as an array, the same
`tol` is traced by whoever passes it, and the failure stands. Real JAX on CPU, in process."""

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


@jax.custom_jvp
def _sqrt(x, tol=0.0):
    return jnp.sqrt(jnp.maximum(x, tol))


@_sqrt.defjvp
def _sqrt_jvp(primals, tangents):
    x, tol = primals
    x_dot, _tol_dot = tangents
    safe_tol = max(tol, 1e-30)
    square_root = _sqrt(x, safe_tol)
    square_root_out = _sqrt(x, tol)
    return (square_root_out, jnp.where(x > safe_tol, x_dot / (2 * square_root), 0.0))
'''


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("numbers") / "ops_numbers.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("ops_numbers", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ops_numbers"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("ops_numbers", None)


def _check(module, tol):
    child = _load_child()
    fun = module._sqrt
    plan, _row, _digest = live_plan(fun.fun, "jvp", module.__file__, fun.fun.__code__.co_firstlineno, ())
    plan.update(kind="jvp", key="ops_numbers._sqrt")
    calls = [[numpy.array([0.5, 1.5, 2.7], numpy.float32), tol]]
    return child.check_live(jax, numpy, fun, plan, calls, 1, False, module)  # float32: x64 stays off


def test_a_number_the_project_passes_as_a_literal_is_held_constant_and_the_raise_is_a_may(module):
    result = _check(module, 1e-06)
    assert result["status"] == "warned", result
    by_name = {c["name"]: c for c in result["checks"]}
    for name, held_by in (("jit(grad)", "jit"), ("vmap(grad)", "vmap")):
        check = by_name[name]
        assert (check["status"], check["severity"], check["code"]) == ("failed", "warning", "VJP504")
        assert check["detail"].startswith(f"`tol` may be traced by a caller: the rule raises under {name} but not "
                                          "eagerly (line 14): TracerBoolConversionError"), check["detail"]
        assert check["detail"].endswith(f"the project passes `tol` as a Python number, which {held_by} holds "
                                        "constant, and so held the gradient agrees with eager: right only as long "
                                        "as no caller traces `tol` (nondiff_argnums would say so)"), check["detail"]
    # grad(jit) traces the literal too (jit's linearization traces every argument): JAX raises there
    # whatever the caller passes, said as a "may" since jit(grad) with `tol` static agrees with eager.
    check = by_name["grad(jit)"]
    assert (check["status"], check["severity"], check["code"]) == ("failed", "warning", "VJP504")
    assert check["detail"].startswith("`tol` is traced under grad(jit): the rule raises under grad(jit) but not "
                                      "eagerly (line 14): TracerBoolConversionError"), check["detail"]
    assert check["detail"].endswith("so a caller that differentiates a jitted function calling it gets this error; "
                                    "held constant (jit(grad) with `tol` static) the gradient agrees with eager; "
                                    "nondiff_argnums would hold `tol` constant everywhere"), check["detail"]
    assert by_name["reverse order 1"]["status"] == "passed" and by_name["jit"]["status"] == "passed"


def test_the_same_argument_passed_as_an_array_is_traced_and_the_failure_stands(module):
    result = _check(module, numpy.asarray(1e-06, numpy.float32))
    assert result["status"] == "failed", result
    check = {c["name"]: c for c in result["checks"]}["jit(grad)"]
    assert (check["status"], check.get("severity"), check["code"]) == ("failed", None, "VJP504")
    assert check["detail"].startswith("raises under jit(grad) but not eagerly (line 14): TracerBoolConversionError")
    check = {c["name"]: c for c in result["checks"]}["grad(jit)"]
    assert (check["status"], check.get("severity"), check["code"]) == ("failed", None, "VJP504")
