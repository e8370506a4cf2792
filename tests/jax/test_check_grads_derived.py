"""check-grads on an argument every call of the module computes from another (heldout6's
`dynamiqs_qr_solve`: the primal `del`s `A` and solves with a QR cache its caller builds from `A`
under `stop_gradient`, `_qr_solve_cached(m, _qr_cache(m), Lm)`; the rule differentiates through
`A` and ignores the cache's tangent). Moving `A` and the cache independently, the primal does not
change with `A` and a right rule failed (VJP502, max rel. error 0.628), so its mutants drew the
base's own code. Now such an argument moves with the one it is computed from, recomputed by the
module's own function, as the callers use it (to first order where that function stops the
gradient); a wrong rule still fails. Real JAX on CPU, through
the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp


def make_cache(a):
    return jax.lax.stop_gradient(2.0 * a), jax.lax.stop_gradient(a * a)


@jax.custom_jvp
def cached_solve(a, cache, b):
    del a
    twice, square = cache
    return b * twice / square


@cached_solve.defjvp
def cached_solve_jvp(primals, tangents):
    a, cache, b = primals
    da, _dcache, db = tangents
    x = cached_solve(a, cache, b)
    return x, 2.0 * db / a - 2.0 * b * da / (a * a)


@jax.custom_jvp
def cached_solve_wrong(a, cache, b):
    del a
    twice, square = cache
    return b * twice / square


@cached_solve_wrong.defjvp
def cached_solve_wrong_jvp(primals, tangents):
    a, cache, b = primals
    da, _dcache, db = tangents
    x = cached_solve_wrong(a, cache, b)
    return x, 2.0 * db / a + 2.0 * b * da / (a * a)  # WRONG: the sign of the `a` term


def model(m, v):
    cache = make_cache(m)
    return cached_solve(m, cache, v) + cached_solve_wrong(m, cache, v)


def EXAMPLE_ARGS():
    m, v = jnp.array([0.7, 1.3, 2.1]), jnp.array([0.4, -1.1, 0.9])
    return {"cached_solve": (m, make_cache(m), v), "cached_solve_wrong": (m, make_cache(m), v)}
'''


@pytest.mark.jax
def test_an_argument_the_callers_compute_from_another_moves_with_it(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--show-checks", "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    tie = "(`cache` computed from `a` by `make_cache` as the module's callers do, line 40)"
    # Fires: the wrong sign, along directions where the cache follows `a`.
    assert lines[0].startswith("ops.py:24:2: VJP502 `cached_solve_wrong`: "), lines
    assert "differs from finite differences" in lines[0] and tie in lines[0], lines
    assert lines[1] == "Found 1 problem.", lines
    # Silent: the right rule, checked as its callers use it.
    assert "ops.py:9: cached_solve (custom_jvp): passed at given inputs\n" in proc.stdout, proc.stdout
    assert tie in proc.stdout
    # The cache is made under stop_gradient: the tie holds to first order only, order 2 is not compared.
    assert "reverse order 2 skipped (`cache` computed from `a` by a function of the module that stops the " \
           "gradient, so the rule's own second derivative misses its dependence (a first-order tie))" in proc.stdout
