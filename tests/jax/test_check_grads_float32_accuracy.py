"""check-grads on a rule that is right to float32's accuracy only (heldout9's arbplusjax: the
derivative in a parameter of a quadrature taken by a central difference with step 1e-2 inside
the rule; the project passes float32). Compared in float64 it differed by 3.06e-05 against a
tolerance of 1e-05 and failed, a false failure for a project that computes in float32. When every
value the project passed is float32, an agreement to 1e-4 is a pass, saying so; at float64
inputs the same rule still fails, and a rule off by a factor fails at float32. Real JAX on CPU,
through the real CLI, one run for the three definitions."""

from __future__ import annotations

import json

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

RULE = '''

@jax.custom_jvp
def {name}(s, x):
    return jnp.exp(-s * x) * jnp.sin(s)


@{name}.defjvp
def {name}_jvp(primals, tangents):
    (s, x), (ds, dx) = primals, tangents
    h = {h}  # the derivative in `s` by a central difference, as the library does
    d_s = (jnp.exp(-(s + h) * x) * jnp.sin(s + h) - jnp.exp(-(s - h) * x) * jnp.sin(s - h)) / (2 * h)
    return {name}(s, x), {factor} * d_s * ds - s * jnp.exp(-s * x) * jnp.sin(s) * dx
'''

OPS = "import jax\nimport jax.numpy as jnp\n" + "".join(RULE.format(name=n, factor=f, h=h) for n, f, h in (
    ("approx", "1.0", "1e-2"), ("approx_at_float64", "1.0", "1e-2"), ("approx_wrong", "1.5", "1e-2"),
    ("approx_coarse", "1.0", "4e-2"))) + '''

def EXAMPLE_ARGS():
    s, x = jnp.array([0.7, 1.3, 2.1], jnp.float32), jnp.array([0.4, 0.9, 1.5], jnp.float32)
    return {"approx": (s, x), "approx_at_float64": (s.astype(jnp.float64), x.astype(jnp.float64)),
            "approx_wrong": (s, x), "approx_coarse": (s, x)}
'''


@pytest.mark.jax
@pytest.mark.skipif(not device_has_float64(), reason="compared in float32 where the device has no float64")
def test_a_rule_right_to_float32_accuracy_passes_where_the_project_computes_in_float32(tmp_path) -> None:
    (tmp_path / "ops.py").write_text(OPS)
    (tmp_path / "pyproject.toml").write_text("[tool.vjplint]\n")
    report = tmp_path / "report.json"
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--report", str(report), "ops.py",
                   cwd=tmp_path, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = {r["function"]: r for r in json.loads(report.read_text())}
    right, at64, wrong = rows["approx"], rows["approx_at_float64"], rows["approx_wrong"]
    assert right["status"] == "passed", right
    first = [c for c in right["checks"] if c["name"] == "forward order 1"][0]
    assert first["status"] == "passed" and first["detail"].startswith(
        "agrees within float32 accuracy, the precision of every value the project passed: max rel. error "), first
    assert first["detail"].endswith(" against float64 finite differences (float64 tolerance 1e-05)"), first
    assert 1e-5 < first["max_error"] <= 1e-4, first
    assert at64["status"] == "failed", at64
    assert at64["reason"].startswith("jvp tangent (along a random tangent) differs from finite differences: max rel. "
                                     "error "), at64["reason"]
    assert wrong["status"] == "failed", wrong
    assert wrong["reason"].startswith("jvp tangent (along a random tangent) differs from finite differences: max rel. "
                                      "error 0."), wrong["reason"]
    # A coarser step (qpax's relaxed KKT point, heldout10: 1.45e-4, a false failure): float32's
    # accuracy is up to 1e-3 at order 1 (check-grads' own float32 tolerance is 0.03).
    coarse = rows["approx_coarse"]
    assert coarse["status"] == "passed", coarse
    first = [c for c in coarse["checks"] if c["name"] == "forward order 1"][0]
    assert 1e-4 < first["max_error"] <= 1e-3, first
    assert ": 2 passed, 2 failed, 0 not checked." in proc.stdout
