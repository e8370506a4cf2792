"""The census rules across modules (issue #45 item 2): a hazard whose evidence is in another module
of the run. Packages in tests/data/crossmodule/ (README there); each runs on JAX below."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli

DATA = Path(__file__).resolve().parents[1] / "data" / "crossmodule"


def _check(cwd: Path, *args: str):
    proc = run_cli("check", "--output-format", "json", "--exit-zero", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return [(d["filename"], d["location"]["row"], d["location"]["column"], d["code"], d["message"])
            for d in json.loads(proc.stdout)]


REMAT_TWICE = (
    "at remat/train.py:8, `jax.grad` of `jax.grad` applies reverse mode twice to custom_vjp `soft_sin`, registered "
    "with `optimize_remat=True` at line 18: the remat-optimised rules support one level of reverse mode, and JAX "
    "0.10.2 raises `ValueError: Linearization failed to produce known values for all output primals` (naming "
    "neither the flag nor the function); drop `optimize_remat=True` from `soft_sin.defvjp(...)` where second "
    "derivatives are needed")


def test_reverse_mode_twice_in_another_module_is_reported_at_the_remat_custom_vjp():
    """VJP339: `jax.grad(jax.grad(ops.soft_sin))` in train.py, the flag in ops.py; the first use is named."""
    assert _check(DATA, "--no-cache", "--select", "VJP339", "remat") == [
        ("remat/ops.py", 5, 2, "VJP339", REMAT_TWICE)]
    assert _check(DATA, "--no-cache", "--select", "VJP339", "remat/ops.py") == []  # alone: nothing to see


@pytest.mark.parametrize("use, how", [
    ("import jax\nfrom remat.ops import soft_sin\n\n\ndef hessian_row(x):\n"
     "    return jax.jacrev(jax.grad(soft_sin))(x)\n", "`jax.jacrev` of `jax.grad`"),
    ("from jax import grad\nfrom remat.ops import soft_sin as s\n\n\ndef curvature(x):\n"
     "    return grad(grad(s))(x)\n", "`jax.grad` of `jax.grad`"),
    ("import jax\nimport remat.ops as o\n\n\ndef curvature(x):\n"
     "    return jax.jit(jax.grad(jax.grad(o.soft_sin)))(x)\n", "`jax.grad` of `jax.grad`"),
    ("import jax\nfrom remat import ops\n\n\ndef pullback(x):\n"
     "    return jax.vjp(jax.grad(ops.soft_sin), x)\n", "`jax.vjp` of `jax.grad`"),
])
def test_reverse_mode_twice_in_other_spellings(tmp_path, use, how):
    """A from-import, an import alias, `from jax import grad`, under `jax.jit`, `jax.vjp` outside (each
    raises the same ValueError on JAX 0.10.2, measured)."""
    (tmp_path / "remat").mkdir()
    for name in ("__init__.py", "ops.py"):
        (tmp_path / "remat" / name).write_text((DATA / "remat" / name).read_text())
    (tmp_path / "remat" / "train.py").write_text(use)
    found = _check(tmp_path, "--no-cache", "--select", "VJP339", "remat")
    assert [(f, r, c, code) for f, r, c, code, _ in found] == [("remat/ops.py", 5, 2, "VJP339")]
    assert found[0][4] == REMAT_TWICE.replace("remat/train.py:8", "remat/train.py:6").replace(
        "`jax.grad` of `jax.grad`", how)


def test_one_level_or_no_flag_stays_silent():
    """`jax.grad(ops.soft_sin)` once, and `grad(grad(...))` of the same rules registered without the flag."""
    assert _check(DATA, "--no-cache", "remat/ops.py", "remat/calm_ops.py", "remat/calm_train.py") == []


REMAT_CONFIRM = '''
from remat import calm_train, train

def outcome(thunk):
    try:
        thunk()
        return "runs"
    except Exception as exc:
        return type(exc).__name__ + ": " + str(exc).split(".")[0]

print(outcome(lambda: train.curvature(0.7)))
print(outcome(lambda: train.hessian_row(0.7)))
print(outcome(lambda: calm_train.curvature(0.7)))
print(outcome(lambda: calm_train.slope(0.7)))
'''


@pytest.mark.jax
def test_the_remat_package_behaves_on_jax_as_the_diagnostics_say():
    proc = subprocess.run([sys.executable, "-c", REMAT_CONFIRM], cwd=DATA, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": pythonpath(DATA), **JAX_ENV})
    assert proc.returncode == 0, proc.stderr[-2000:]
    raised = "ValueError: Linearization failed to produce known values for all output primals"
    assert proc.stdout.splitlines() == [raised, raised, "runs", "runs"]


ALIASED = "\n\nsine = soft_sin  # the public name\n"
USES_ALIAS = ("import jax\nfrom remat import ops\n\n\ndef curvature(x):\n    return jax.grad(jax.grad(ops.sine))(x)\n\n\n"
              "def tangent(x, v):\n    return jax.jvp(ops.sine, (x,), (v,))\n")


def _aliased_package(tmp_path: Path, ops: str) -> None:
    (tmp_path / "remat").mkdir()
    (tmp_path / "remat" / "__init__.py").write_text("")
    (tmp_path / "remat" / "ops.py").write_text((DATA / "remat" / ops).read_text() + ALIASED)
    (tmp_path / "remat" / "train.py").write_text(USES_ALIAS)


def test_a_module_level_alias_used_in_another_module_is_the_custom_vjp(tmp_path):
    """`sine = soft_sin` in ops.py, `jax.grad(jax.grad(ops.sine))` (VJP339) and `jax.jvp(ops.sine, ...)`
    (VJP315) in train.py: both reported at `soft_sin`'s def (both raise on JAX 0.10.2, below)."""
    _aliased_package(tmp_path, "ops.py")
    found = _check(tmp_path, "--no-cache", "--select", "VJP315,VJP339", "remat")
    assert [(f, r, c, code) for f, r, c, code, _ in found] == [("remat/ops.py", 5, 2, "VJP315"),
                                                              ("remat/ops.py", 5, 2, "VJP339")]
    assert found[0][4].startswith("at remat/train.py:10, `jax.jvp` pushes tangents through `soft_sin`, a custom_vjp")
    assert found[1][4] == REMAT_TWICE.replace("remat/train.py:8", "remat/train.py:6")


def test_an_alias_of_the_calm_one_draws_only_the_forward_mode_report(tmp_path):
    """Without `optimize_remat`, `grad(grad(ops.sine))` works: only the jvp (VJP315) is reported."""
    _aliased_package(tmp_path, "calm_ops.py")
    found = _check(tmp_path, "--no-cache", "--select", "VJP315,VJP339", "remat")
    assert [(f, r, c, code) for f, r, c, code, _ in found] == [("remat/ops.py", 5, 2, "VJP315")]


ALIAS_CONFIRM = '''
from remat import train

for thunk in (lambda: train.curvature(0.7), lambda: train.tangent(0.7, 1.0)):
    try:
        thunk()
        print("runs")
    except Exception as exc:
        print(type(exc).__name__ + ": " + str(exc).split(".")[0])
'''


@pytest.mark.jax
@pytest.mark.parametrize("ops, expected", [
    ("ops.py", ["ValueError: Linearization failed to produce known values for all output primals",
                "TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function"]),
    ("calm_ops.py", ["runs", "TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function"]),
])
def test_the_aliased_packages_behave_on_jax_as_the_diagnostics_say(tmp_path, ops, expected):
    _aliased_package(tmp_path, ops)
    proc = subprocess.run([sys.executable, "-c", ALIAS_CONFIRM], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": pythonpath(tmp_path), **JAX_ENV})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == expected


FACTORY = ("import jax\nimport jax.numpy as jnp\n\n\ndef make_soft(scale):\n    @jax.custom_vjp\n"
           "    def soft(x):\n        return scale * jnp.sin(x)\n\n    def soft_fwd(x):\n        return soft(x), x\n\n"
           "    def soft_bwd(x, g):\n        return (scale * jnp.cos(x) * g,)\n\n"
           "    soft.defvjp(soft_fwd, soft_bwd{flag})\n    return soft\n\n\nsoft = make_soft(2.0)\n")
FACTORY_USE = ("import jax\n\nfrom fac import ops\n\n\ndef curvature(x):\n    return jax.grad(jax.grad(ops.soft))(x)\n\n\n"
               "def tangent(x, v):\n    return jax.jvp(ops.soft, (x,), (v,))\n")
CALM_FACTORY_USE = ("import jax\n\nfrom fac import ops\n\n\ndef curvature(x):\n"
                    "    return jax.grad(jax.grad(ops.soft))(x)\n\n\ndef slope(x):\n    return jax.grad(ops.soft)(x)\n")


def _factory_package(tmp_path: Path, flag: str, use: str) -> None:
    (tmp_path / "fac").mkdir()
    (tmp_path / "fac" / "__init__.py").write_text("")
    (tmp_path / "fac" / "ops.py").write_text(FACTORY.format(flag=flag))
    (tmp_path / "fac" / "train.py").write_text(use)


def test_a_factory_result_used_in_another_module_is_the_custom_vjp_it_returns(tmp_path):
    """`soft = make_soft(2.0)` in ops.py; train.py differentiates `ops.soft` twice and pushes tangents
    through it: VJP339 and VJP315 at the def inside the factory (before: neither)."""
    _factory_package(tmp_path, ", optimize_remat=True", FACTORY_USE)
    found = _check(tmp_path, "--no-cache", "--select", "VJP315,VJP339", "fac")
    assert [(f, r, c, code) for f, r, c, code, _ in found] == [("fac/ops.py", 6, 6, "VJP315"),
                                                              ("fac/ops.py", 6, 6, "VJP339")]
    assert found[0][4].startswith("at fac/train.py:11, `jax.jvp` pushes tangents through `soft`, a custom_vjp")
    assert found[1][4].startswith("at fac/train.py:7, `jax.grad` of `jax.grad` applies reverse mode twice to "
                                  "custom_vjp `soft`, registered with `optimize_remat=True` at line 16:")
    assert _check(tmp_path, "--no-cache", "--select", "VJP315,VJP339", "fac/ops.py") == []


def test_a_factory_result_differentiated_as_jax_allows_stays_silent(tmp_path):
    _factory_package(tmp_path, "", CALM_FACTORY_USE)
    assert _check(tmp_path, "--no-cache", "fac") == []


FACTORY_CONFIRM = '''
from fac import train

for name in ("curvature", "tangent", "slope"):
    if hasattr(train, name):
        try:
            getattr(train, name)(*(0.7, 1.0)[:2 if name == "tangent" else 1])
            print("runs")
        except Exception as exc:
            print(type(exc).__name__ + ": " + str(exc).split(".")[0])
'''


@pytest.mark.jax
@pytest.mark.parametrize("flag, use, expected", [
    (", optimize_remat=True", FACTORY_USE,
     ["ValueError: Linearization failed to produce known values for all output primals",
      "TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function"]),
    ("", CALM_FACTORY_USE, ["runs", "runs"]),
])
def test_the_factory_packages_behave_on_jax_as_the_diagnostics_say(tmp_path, flag, use, expected):
    _factory_package(tmp_path, flag, use)
    proc = subprocess.run([sys.executable, "-c", FACTORY_CONFIRM], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": pythonpath(tmp_path), **JAX_ENV})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == expected
