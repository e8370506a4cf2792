"""A registration in the rules' module on a primal imported from another module of the run (issue
45, spell6 item 2: `from .prims import scale; scale.defvjp(scale_fwd, scale_bwd)`,
`@softsign.defjvp`): vjplint.project.rule_defs grafts the decorated primal of prims.py into
registrations.py's model (vjplint.facts.crossmodule.Graft), so its rules are judged against the
primal's signature and nondiff arguments where they are written (tests/data/crossmodule/importedprimal).
The look-alikes (calm_registrations.py) stay silent, a module linted alone is as before, and JAX
raises for each hazard and for no look-alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import JAX_ENV, ROOT, pythonpath, run_cli

DATA = ROOT / "tests" / "data" / "crossmodule"

IMPORTED = [
    ('importedprimal/registrations.py', 11, 5, 'VJP305',
     'bwd `scale_bwd` takes 2 positional parameters (res, g), but JAX calls it with 3 arguments, bwd(n, '
     'residuals, cotangent): the nondiff argument `n` first (sorted by position), then the residuals, then the '
     'output cotangent; differentiating `scale` raises `TypeError: scale_bwd() takes 2 positional arguments but '
     '3 were given`'),
    ('importedprimal/registrations.py', 24, 12, 'VJP306',
     'bwd `mul_bwd` returns 1 cotangent but `mul` has 2 differentiable arguments (x, y); differentiating `mul` '
     'raises `TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) structure '
     'as the args tuple of the primal function ...`; return one cotangent (or None) per differentiable argument, '
     'in order'),
    ('importedprimal/registrations.py', 31, 5, 'VJP312',
     'jvp rule `softsign_jvp` of custom_jvp `softsign` takes 1 positional parameter (primals), but JAX calls it '
     'with 2 positional arguments (primals, tangents), so differentiating `softsign` (jvp, grad, jacfwd) raises '
     '`TypeError: softsign_jvp() takes 1 positional argument but 2 were given`; give it the parameters '
     '(primals, tangents)'),
]


def _check(*args: str):
    proc = run_cli("check", "--output-format", "json", "--exit-zero", *args, cwd=DATA)
    assert proc.returncode == 0, proc.stderr
    return [(d["filename"], d["location"]["row"], d["location"]["column"], d["code"], d["message"])
            for d in json.loads(proc.stdout)]


def test_rules_registered_on_an_imported_primal_are_judged_against_it():
    assert _check("--no-cache", "importedprimal") == IMPORTED


def test_the_look_alikes_stay_silent_and_a_module_alone_is_as_before():
    assert _check("--no-cache", "importedprimal/prims.py", "importedprimal/calm_registrations.py") == []
    assert _check("--no-cache", "importedprimal/registrations.py") == []
    assert _check("--no-cache", "importedprimal/prims.py") == []


def test_the_cache_follows_an_edit_of_the_primals_module(tmp_path):
    import shutil

    root = tmp_path / "proj"
    shutil.copytree(DATA / "importedprimal", root / "importedprimal")
    cache = ["--cache-dir", str(tmp_path / "cache")]

    def check():
        proc = run_cli("check", "--output-format", "json", "--exit-zero", *cache, "importedprimal", cwd=root)
        assert proc.returncode == 0, proc.stderr
        return [(d["location"]["row"], d["code"]) for d in json.loads(proc.stdout)]
    assert check() == [(11, "VJP305"), (24, "VJP306"), (31, "VJP312")]
    assert check() == [(11, "VJP305"), (24, "VJP306"), (31, "VJP312")]  # warm
    prims = root / "importedprimal" / "prims.py"
    prims.write_text(prims.read_text(encoding="utf-8").replace(
        "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef scale(", "@jax.custom_vjp\ndef scale("), encoding="utf-8")
    # `scale` has no nondiff argument now: bwd(res, g) is right, and it owes two cotangents
    assert [c for c in check()] == [(12, "VJP306"), (24, "VJP306"), (31, "VJP312")]


PROBE = """
import sys
import jax
reg = __import__("importedprimal." + sys.argv[1], fromlist=["_"])
prims = __import__("importedprimal.prims", fromlist=["_"])
calm = sys.argv[1].startswith("calm")
cases = {
    "scale": lambda: jax.grad(prims.calm_scale if calm else prims.scale)(0.5, 2.0),
    "mul": lambda: jax.grad(prims.calm_mul if calm else prims.mul)(0.5, 2.0),
    "softsign": lambda: jax.grad(prims.calm_softsign if calm else prims.softsign)(0.5),
}
for name, run in cases.items():
    try:
        run()
        print(name, "ok")
    except Exception as exc:
        print(name, type(exc).__name__)
"""


@pytest.mark.jax
def test_jax_raises_for_each_hazard_and_for_no_look_alike():
    env = {**os.environ, "PYTHONPATH": pythonpath(DATA), **JAX_ENV}
    outcomes = {}
    for module in ("registrations", "calm_registrations"):
        proc = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True, text=True, timeout=300,
                              env=env, cwd=DATA)
        assert proc.returncode == 0, proc.stderr
        outcomes[module] = dict(line.split() for line in proc.stdout.splitlines())
    assert outcomes["registrations"] == {"scale": "TypeError", "mul": "TypeError", "softsign": "TypeError"}
    assert outcomes["calm_registrations"] == {"scale": "ok", "mul": "ok", "softsign": "ok"}


HELPER_PROBE = """
import sys
import jax, jax.numpy as jnp
ns = {}
exec(sys.stdin.read(), ns)
try:
    print(jax.grad(ns["loss"], argnums=(0, 1))(jnp.ones(2), jnp.ones(2))[0].tolist())
except Exception as exc:
    print(type(exc).__name__)
"""


@pytest.mark.jax
def test_jax_raises_for_the_rule_registered_through_a_helper_and_runs_the_look_alike():
    """tests/unit/test_registration_helper.py's module, on JAX: the helper registers the rules."""
    from tests.unit.test_registration_helper import HELPER

    env = {**os.environ, **JAX_ENV}
    outcomes = []
    for ret in ("(g * y,)", "(g * y, g * x)"):
        proc = subprocess.run([sys.executable, "-c", HELPER_PROBE], input=HELPER.format(ret=ret), capture_output=True,
                              text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
        outcomes.append(proc.stdout.strip())
    assert outcomes == ["TypeError", "[1.0, 1.0]"]


def test_a_finding_in_the_imported_primal_is_reported_in_its_own_module_only(tmp_path):
    """`nondiff_argnums=(5,)` on prims.py's `scale` (VJP103): found in prims.py, where it is written,
    and not again on the registration in registrations.py, which reads that primal grafted."""
    import shutil

    root = tmp_path / "proj"
    shutil.copytree(DATA / "importedprimal", root / "importedprimal")
    prims = root / "importedprimal" / "prims.py"
    prims.write_text(prims.read_text(encoding="utf-8").replace(
        "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef scale(", "@partial(jax.custom_vjp, nondiff_argnums=(5,))\ndef scale("),
        encoding="utf-8")
    proc = run_cli("check", "--output-format", "json", "--exit-zero", "--no-cache", "importedprimal", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert [(d["filename"], d["location"]["row"], d["code"]) for d in json.loads(proc.stdout)] == [
        ("importedprimal/prims.py", 9, "VJP103"), ("importedprimal/registrations.py", 24, "VJP306"),
        ("importedprimal/registrations.py", 31, "VJP312")]
