"""fwd/bwd/jvp rules registered in one module and defined in another module of the run (issue 45,
item 2: vjplint.project.rule_defs, vjplint.facts.crossmodule.Graft): the package
tests/data/crossmodule/splitrules, linted as a run, reports each broken rule of `_rules.py` on its
registration in `ops.py`, naming the def's file and line (the rules imported by name and through
`from . import _rules as R`; defvjp, defjvp and defjvps); its look-alikes (`calm_ops.py`,
`calm_rules.py`) stay silent; a module linted alone behaves as before; a `# noqa` on the rule's own line holds; the per-file cache and the
Language Server's per-file index follow an edit of the rules' module. JAX raises for every hazard
of `ops.py` and for none of `calm_ops.py`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import JAX_ENV, ROOT, pythonpath, run_cli

DATA = ROOT / "tests" / "data" / "crossmodule"

SPLIT = [
    ('splitrules/ops.py', 15, 17, 'VJP338',
     'jvp rule `softsign_jvp` of custom_jvp `softsign` returns the primal output `(x / d,)`, a 1-element tuple, '
     "but `softsign` returns one array (`softsign` returns `x / (1.0 + jnp.abs(x))`): the rule's primal output "
     'replaces the function\'s output, so `jax.grad(jax.jit(softsign))` raises TypeError "Custom JVP rule '
     'softsign_jvp for function softsign must produce a pair ... of the same container/pytree structure" and '
     "`jvp`/`grad` otherwise give `softsign` that structure; return the output with the function's structure "
     '(one array), and a tangent like it (in `softsign_jvp` at splitrules/_rules.py:11)'),
    ('splitrules/ops.py', 23, 19, 'VJP335',
     'the jvp rule `smooth_abs_jvp` of `smooth_abs` branches with `if` on `t == 0`, computed from its tangents: '
     'under `jax.grad` (and `jit`, `vmap`) the tangents are tracers even when the primals are concrete, and '
     'converting one to a Python value raises `TracerBoolConversionError` (`ConcretizationTypeError` for '
     '`float()`/`int()`); eager `jax.jvp` passes concrete tangents, so only forward-mode tests pass. Compute on '
     'the value (`jnp.where`, `lax.cond`) or drop the special case (in `smooth_abs_jvp` at '
     'splitrules/_rules.py:17)'),
    ('splitrules/ops.py', 31, 17, 'VJP340',
     'jvp rule `softplus_jvp` of custom_jvp `softplus` returns the primal output `jnp.logaddexp(x, '
     '0.0).astype(jnp.bfloat16)`, cast to bfloat16, with the tangent `jax.nn.sigmoid(x) * t`, not cast to '
     "bfloat16: a tangent output must have its primal output's dtype, so unless every input of `softplus` is "
     'already bfloat16, `jax.jvp`/`jax.grad` of `softplus` may raise TypeError "Custom JVP rule must produce '
     'primal and tangent outputs with corresponding shapes and dtypes"; return the primal output in its own '
     'dtype, or cast the tangent to bfloat16 too (in `softplus_jvp` at splitrules/_rules.py:24)'),
    ('splitrules/ops.py', 39, 17, 'VJP336',
     '`jax.pure_callback` without `vmap_method=` in the fwd rule of custom_vjp `host_exp`: under `jax.vmap` (a '
     'batch of inputs, `vmap(grad(...))`) JAX 0.10 raises NotImplementedError for a callback without a '
     'vmap_method, while eager, `jit` and `grad` work; pass `vmap_method="sequential"` (one call per element, '
     'what older JAX did) or `"expand_dims"`/`"broadcast_all"` when the callback handles a batch (in '
     '`host_exp_fwd` at splitrules/_rules.py:28)'),
    ('splitrules/ops.py', 47, 13, 'VJP304',
     'fwd `clip_fwd` returns `jnp.clip(x, 0.0, 1.0)` (an array), not a pair (primal_out, residuals): '
     'differentiating `clip` raises `TypeError: Custom VJP fwd rule clip_fwd for function clip must produce a '
     'pair (list or tuple of length two) ...`; return `(primal_out, residuals)` (use `None` for no residuals) '
     '(in `clip_fwd` at splitrules/_rules.py:37)'),
    ('splitrules/ops.py', 55, 27, 'VJP306',
     'bwd `shift_bwd` returns 1 cotangent but `shift` has 2 differentiable arguments (x, s); differentiating '
     '`shift` raises `TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) '
     'structure as the args tuple of the primal function ...`; return one cotangent (or None) per '
     'differentiable argument, in order (in `shift_bwd` at splitrules/_rules.py:49)'),
    ('splitrules/ops.py', 63, 18, 'VJP601',
     'the jvp rule `soft_clip_jvp` of `soft_clip` returns a tangent that is not linear in the input tangents: '
     '`_limit((1.0 - jnp.tanh(x) ** 2) * v, 10.0)` passes a tangent term to `_limit` (splitrules/_rules.py:52), '
     'where `v * bound / jnp.linalg.norm(v)` divides by a tangent term. `jax.grad` fails when JAX transposes it '
     "(NotImplementedError 'Transpose rule ... not implemented', or an AssertionError), and "
     "`jax.jvp`/`jax.jacfwd` return values that are silently wrong (they change with the tangent's scale). "
     'Compute the nonlinear part from the primals and multiply the tangent by it (e.g. `jnp.sign(x) * t` for '
     '`jnp.abs(t)`), or use a custom_vjp for a rule that must be nonlinear in the cotangent (in `soft_clip_jvp` '
     'at splitrules/_rules.py:60)'),
    ('splitrules/ops.py', 71, 17, 'VJP333',
     'defjvps rule 0 of custom_jvp `sigmoid` returns the tangent `(g * ans * (1.0 - ans),)`, a 1-element tuple, '
     "but the function's output is one array (`sigmoid` returns `1.0 / (1.0 + jnp.exp(-x))`): JAX requires the "
     "tangent to have the primal output's structure, so differentiating `sigmoid` (jvp, grad, jacfwd) raises "
     'TypeError "Custom JVP rule jvp for function sigmoid must produce primal and tangent outputs with equal '
     'container (pytree) structures". Return a tangent shaped like the output (one array) (in `sigmoid_dx` at '
     'splitrules/_rules.py:64)'),
]


def _check(cwd: Path, *args: str):
    proc = run_cli("check", "--output-format", "json", "--exit-zero", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return [(d["filename"], d["location"]["row"], d["location"]["column"], d["code"], d["message"])
            for d in json.loads(proc.stdout)]


def test_rules_of_another_module_are_read_where_they_are_registered():
    assert _check(DATA, "--no-cache", "splitrules") == SPLIT


def test_look_alike_rules_in_another_module_stay_silent():
    assert _check(DATA, "--no-cache", "splitrules/calm_ops.py", "splitrules/calm_rules.py") == []


def test_a_module_alone_is_linted_as_before():
    assert _check(DATA, "--no-cache", "splitrules/ops.py") == []
    assert _check(DATA, "--no-cache", "splitrules/_rules.py") == []


@pytest.mark.unit
def test_lint_source_without_a_project_reads_no_other_module():
    from vjplint.lint.engine import lint_source
    from vjplint.settings.config import Config

    path = DATA / "splitrules" / "ops.py"
    assert lint_source(str(path), path.read_bytes(), Config()).diagnostics == []


def test_a_noqa_on_the_rules_line_holds_and_the_cache_follows_the_rules_module(tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(DATA / "splitrules", root / "splitrules")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert _check(root, *cache, "splitrules") == SPLIT
    assert _check(root, *cache, "splitrules") == SPLIT  # warm
    rules = root / "splitrules" / "_rules.py"
    text = rules.read_text(encoding="utf-8")
    rules.write_text(text.replace("    return (x / d,), (t / d**2,)\n", "    return x / d, t / d**2\n")
                     .replace("    if t == 0:\n", "    if t == 0:  # noqa: VJP335\n"), encoding="utf-8")
    assert _check(root, *cache, "splitrules") == [f for f in SPLIT if f[3] not in ("VJP338", "VJP335")]
    rules.write_text(text.replace("    if t == 0:\n", "    if t == 0:  # noqa: VJP304\n"), encoding="utf-8")
    assert _check(root, *cache, "splitrules") == SPLIT  # another code's noqa holds nothing


@pytest.mark.unit
def test_the_servers_per_file_index_reads_the_rules_module_and_follows_its_edits(tmp_path):
    """The Language Server's project facts (vjplint.server.project_index) hold the same rows as the
    run, and an edit of the rules' module changes the registering module's facts."""
    from vjplint.project.index import build_index
    from vjplint.server.indexing import _python_files
    from vjplint.server.project_index import FolderFacts
    from vjplint.settings.config import Config

    root = tmp_path / "proj"
    shutil.copytree(DATA / "splitrules", root / "splitrules")
    files = sorted((root / "splitrules").glob("*.py"))
    run = build_index(files, Config(), use_cache=False, base=str(root), cross_module=True)
    assert sorted(run.external) == ["splitrules.calm_ops", "splitrules.ops"]
    assert [row[1:5] for row in run.external["splitrules.ops"]][:2] == [
        ("R.clip_bwd", "clip_bwd", "splitrules/_rules.py", 40), ("R.clip_fwd", "clip_fwd", "splitrules/_rules.py", 36)]
    served = build_index(files, Config(), use_cache=False, base=str(root))
    buffers = {}
    facts = FolderFacts(_python_files(served, files, str(root)), lambda path: buffers.get(path))
    facts.build()
    assert facts.external == run.external
    rules = str(root / "splitrules" / "_rules.py")
    text = (root / "splitrules" / "_rules.py").read_text(encoding="utf-8")
    buffers[rules] = text.replace("(x / d,), (t / d**2,)", "x / d, t / d**2")
    assert facts.update(rules, buffers[rules]) == {"splitrules.ops"}
    Path(rules).write_text(buffers[rules], encoding="utf-8")
    assert facts.external == build_index(files, Config(), use_cache=False, base=str(root), cross_module=True).external


PROBE = """
import sys
import jax
import jax.numpy as jnp
ops = __import__("splitrules." + sys.argv[1], fromlist=["_"])
cases = {
    "softsign": lambda: jax.grad(jax.jit(ops.softsign))(0.5),
    "smooth_abs": lambda: jax.grad(ops.smooth_abs)(0.5),
    "softplus": lambda: jax.grad(ops.softplus)(0.5),
    "host_exp": lambda: jax.vmap(jax.grad(ops.host_exp))(jnp.ones(3)),
    "clip": lambda: jax.grad(ops.clip)(0.5),
    "shift": lambda: jax.grad(ops.shift)(0.5, 1.0),
    "soft_clip": lambda: jax.grad(ops.soft_clip)(0.5),
    "sigmoid": lambda: jax.grad(ops.sigmoid)(0.5),
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
    for module in ("ops", "calm_ops"):
        proc = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True, text=True, timeout=300,
                              env=env, cwd=DATA)
        assert proc.returncode == 0, proc.stderr
        outcomes[module] = dict(line.split() for line in proc.stdout.splitlines())
    assert outcomes["ops"] == {"softsign": "TypeError", "smooth_abs": "TracerBoolConversionError",
                               "softplus": "TypeError", "host_exp": "NotImplementedError", "clip": "TypeError",
                               "shift": "TypeError", "soft_clip": "TracerBoolConversionError",
                               "sigmoid": "TypeError"}
    assert set(outcomes["calm_ops"].values()) == {"ok"}
