"""check-grads on a bwd rule that returns None for an argument whose finite differences are NaN
(heldout8's agjax: a host function `x ** power` with the exponent traced but declared not
differentiated by the wrapper, `None` in its bwd; moving `power` off 2.0 makes a negative `x`'s
power NaN). The references cannot decide for that argument, and that used to leave the whole
derivative "not checked", the arguments the rule does differentiate included, so a wrong
cotangent for `x` went unreported. Now the None argument is skipped, saying why, and the others
are compared. Real JAX on CPU, through the real CLI, one run for both definitions.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import JAX_ENV, device_has_float64, pythonpath, run_cli

PREC = "float64" if device_has_float64() else "float32"

OPS = '''\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def powered(power, x):
    return x ** power


def powered_fwd(power, x):
    return x ** power, (power, x)


def powered_bwd(res, g):
    power, x = res
    return None, g * power * x ** (power - 1)  # `power` declared not differentiated


powered.defvjp(powered_fwd, powered_bwd)


@jax.custom_vjp
def powered_wrong(power, x):
    return x ** power


def powered_wrong_fwd(power, x):
    return x ** power, (power, x)


def powered_wrong_bwd(res, g):
    power, x = res
    return None, g * (power + 1) * x ** (power - 1)  # WRONG: the factor


powered_wrong.defvjp(powered_wrong_fwd, powered_wrong_bwd)


def EXAMPLE_ARGS():
    x = jnp.array([0.3, -0.7, 1.1], jnp.float32)
    power = jnp.asarray(2.0, jnp.float32)
    return {"powered": (power, x), "powered_wrong": (power, x)}
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("none_undecided")
    (tmp / "ops.py").write_text(OPS)
    (tmp / "pyproject.toml").write_text("[tool.vjplint]\n")
    report = tmp / "report.json"
    proc = run_cli("check-grads", "--no-recorded", "--output-format", "concise", "--report", str(report), "ops.py",
                   cwd=tmp, env={**JAX_ENV, "PYTHONPATH": pythonpath(tmp)}, timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return proc.stdout, {r["function"]: r for r in json.loads(report.read_text())}


@pytest.mark.jax
def test_a_wrong_cotangent_beside_an_undecidable_none_is_reported(run) -> None:
    out, _ = run
    lines = out.splitlines()
    assert lines[0] == (
        "ops.py:22:2: VJP501 `powered_wrong`: bwd cotangent for `x` differs from finite differences: max rel. "
        f"error 0.333 at power={PREC}[], x={PREC}[3] (order 1, {PREC}; tolerance "
        f"{'1e-05' if PREC == 'float64' else '0.03'}); the primal's own autodiff agrees with finite differences and "
        "differs from the rule by 0.333"), lines
    assert lines[1] == "Found 1 problem.", lines
    assert ": 1 passed, 1 failed, 0 not checked." in out


@pytest.mark.jax
def test_a_right_rule_whose_none_argument_cannot_be_decided_passes_for_the_others(run) -> None:
    _, rows = run
    right = rows["powered"]
    assert right["status"] == "passed", right
    skipped = [c for c in right["checks"] if c["name"] == "reverse order 1" and c["status"] == "skipped"]
    assert [c["detail"] for c in skipped] == [
        "not compared for `power`: the bwd rule returns None for it (it declares `power` not differentiated), and "
        f"the references do not decide there: the primal's own autodiff is NaN or inf at power={PREC}[], x={PREC}[3]: "
        "the point may not be smooth (the reason a rule exists), so finite differences alone do not decide"]
    assert [c["status"] for c in right["checks"] if c["name"] == "reverse order 1"] == ["passed", "skipped"]
