"""Issue 18's hazard families: the measured JAX facts stay true, and the rules follow them.

- `jax` layer: every `docs/facts/scripts/hazard_*.py` reproduces its saved output on the JAX
  installed here (a label that moves is news: the rule built on it must be revisited).
- `unit` layer: VJP601 and VJP315 agree, case by case, with the tables those scripts measured.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT, pythonpath
from vjplint.lint import engine

SCRIPTS = ROOT / "docs" / "facts" / "scripts"
HAZARD_SCRIPTS = sorted(p.name for p in SCRIPTS.glob("hazard_*.py"))


def _body(text: str) -> list:
    """The measurement lines: the header (versions) aside, object addresses masked."""
    return [re.sub(r"0x[0-9a-f]+", "0x…", line) for line in text.splitlines() if not line.startswith("# ")]


# The scripts run in one process that imports JAX once and forks a child per script, which runs
# it as `python <script>` would (`__main__`, its folder first on sys.path, its own stdout and
# stderr, a fresh interpreter state but for the modules already imported; JAX's backend is not
# started before the fork). One import of JAX instead of one per script.
_DRIVER = """
import json, os, runpy, sys, traceback
import jax, jax.numpy  # noqa: F401  (imported once: every script uses them)
out = {}
for script in json.loads(sys.argv[1]):
    paths = {name: os.path.join(sys.argv[2], script + "." + name) for name in ("out", "err")}
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            for fd, name in ((1, "out"), (2, "err")):
                os.dup2(os.open(paths[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            sys.argv = [script]
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    texts = [open(paths[name], encoding="utf-8", errors="replace").read() for name in ("out", "err")]
    out[script] = [os.waitstatus_to_exitcode(status)] + texts
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def script_runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    import json

    where = tmp_path_factory.mktemp("fact_scripts")
    proc = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(HAZARD_SCRIPTS), str(where)], cwd=SCRIPTS,
                          capture_output=True, text=True, timeout=1800,
                          env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin",  # the saved outputs are the CPU's
                               "PYTHONPATH": pythonpath()})  # a JAX installed on PYTHONPATH only
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.jax
@pytest.mark.parametrize("script", HAZARD_SCRIPTS)
def test_fact_script_reproduces_its_saved_output(script, script_runs):
    returncode, stdout, stderr = script_runs[script]
    assert returncode == 0, stderr[-2000:]
    saved = (SCRIPTS / "out" / script.replace(".py", ".txt")).read_text(encoding="utf-8")
    assert _body(stdout) == _body(saved)


def _codes(source: str, code: str) -> list:
    result = engine.lint_source("case.py", textwrap.dedent(source))
    return [(d.code, d.location.row) for d in result.diagnostics if d.code == code]


# (tangent expression, measured outcome in hazard_nonlinear_jvp.py and hazard_heldout_two.py): "ok"
# transposes and is right; "raises" fails under grad; "affine" is ignored by grad and added by jvp;
# "stop" (stop_gradient) and "select" (a condition on a tangent) fail under grad.
TANGENTS = [
    ("2.0 * x * t", "ok"),
    ("jnp.where(x != 0, 2.0 * x * t, 0.0)", "ok"),
    ("2.0 * x * t / 1.0 + 0.0 * t", "ok"),
    ("(t * 2.0 * x).astype(jnp.float32)", "ok"),
    ("2.0 * x * t * t", "raises"),
    ("2.0 * x * t ** 2", "raises"),
    ("jnp.abs(2.0 * x * t)", "raises"),
    ("jnp.nan_to_num(2.0 * x * t)", "raises"),
    ("jnp.sin(2.0 * x * t)", "raises"),
    ("2.0 * x / t", "raises"),
    ("2.0 * x * t + x", "affine"),
    ("2.0 * x * t + 1.0", "affine"),
    ("jnp.maximum(2.0 * x * t, 0.0)", "raises"),
    # hazard_heldout_two.py section 3: jvp, jacfwd, linearize right; grad raises (no transpose rule)
    ("2.0 * x * jax.lax.stop_gradient(t)", "stop"),
    ("jax.lax.stop_gradient(2.0 * x * t)", "stop"),
    ("2.0 * jax.lax.stop_gradient(x) * t", "ok"),
    # section 4: a selection whose condition reads a tangent; grad raises an AssertionError
    ("jnp.where(t > 0.0, 2.0 * x * t, 0.0)", "select"),
    ("jax.lax.select(t == 0.0, jnp.zeros_like(x), 2.0 * x * t)", "select"),
    ("jax.lax.select(x == 0.0, jnp.zeros_like(x), 2.0 * x * t)", "ok"),
    ("masked(t, x) + masked(x, 0.0 * x)", "ok"),
    ("masked(x, t)", "select"),
]


@pytest.mark.parametrize("tangent, measured", TANGENTS)
def test_vjp601_follows_the_measured_table(tangent, measured):
    source = f'''
    import jax
    import jax.numpy as jnp

    @jax.custom_jvp
    def f(x):
        return x ** 2

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return x ** 2, {tangent}

    def masked(a, m):
        return jnp.where(m > 0.0, a * 2.0, 0.0)
    '''
    found = _codes(source, "VJP601")
    assert found == ([] if measured == "ok" else [("VJP601", 12)])
    if measured in ("affine", "stop", "select"):
        message = engine.lint_source("case.py", textwrap.dedent(source)).diagnostics[0].message
        assert ("`jax.grad` ignores that term" in message) == (measured == "affine")
        assert ("a condition computed from a tangent term" in message) == (measured == "select")
        assert ("for 'stop_gradient' not implemented' (jax-ml/jax#10994)" in message) == (measured == "stop")


def test_vjp601_stop_gradient_on_the_tangents_tuple():
    source = '''
    import jax
    from jax import lax

    @jax.custom_jvp
    def f(x):
        return 0.5 * x ** 2

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,) = primals
        (dx,) = lax.stop_gradient(tangents)
        return f(x), x * dx
    '''
    (d,) = [d for d in engine.lint_source("case.py", textwrap.dedent(source)).diagnostics if d.code == "VJP601"]
    assert (d.location.row, d.location.column) == (12, 13)
    assert d.message == (
        "the jvp rule `f_jvp` of `f` returns a tangent that JAX cannot transpose: `lax.stop_gradient(tangents)` "
        "applies `lax.stop_gradient` to a tangent term. `jax.jvp`, `jax.jacfwd` and `jax.linearize` work "
        "(stop_gradient keeps the value), but reverse mode transposes the tangent computation and stop_gradient "
        "has no transpose rule: `jax.grad` with respect to that input raises NotImplementedError 'Transpose rule "
        "(for reverse-mode differentiation) for 'stop_gradient' not implemented' (jax-ml/jax#10994). Drop the "
        "stop_gradient: tangents need none; to cut a derivative, return `jnp.zeros_like(t)` for that part, or "
        "apply stop_gradient to the primals")


def test_vjp601_custom_jvp_reused_on_tangents_with_the_mask_on_a_tangent():
    source = '''
    import jax
    import jax.numpy as jnp

    @jax.custom_jvp
    def f(x, w):
        return jax.lax.select(jnp.equal(w, 0.0), jnp.zeros_like(x), x * w)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, w), (dx, dw) = primals, tangents
        return f(x, w), f(dx, w) + f(x, dw)
    '''
    (d,) = [d for d in engine.lint_source("case.py", textwrap.dedent(source)).diagnostics if d.code == "VJP601"]
    assert (d.location.row, d.location.column) == (12, 32)
    assert d.message == (
        "the jvp rule `f_jvp` of `f` returns a tangent that is not linear in the input tangents: `f(x, dw)` passes "
        "a tangent term to `f` (line 6), where `jax.lax.select(jnp.equal(w, 0.0), jnp...` selects on "
        "`jnp.equal(w, 0.0)`, a condition computed from a tangent term. `jax.grad` raises an AssertionError when "
        "JAX transposes the selection (its condition must not depend on a tangent; jax-ml/jax#5202), and "
        "`jax.jvp`/`jax.jacfwd` are silently wrong wherever the condition on the tangent differs from the one on "
        "the primal. Compute the condition from the primals only; when the rule reuses a function on the "
        "tangents, pass the primal in the argument the condition reads")
    assert _codes(source.replace("f(x, dw)", "f(dw, x)"), "VJP601") == []  # the mask reads the primal


# (transformation of `f`, which rules call a custom_vjp, measured failure in hazard_forward_over_reverse.py)
FORWARD_OVER_REVERSE = [
    ("jax.hessian(f)(X)", "inline", False),
    ("jax.hessian(f)(X)", "fwd calls f", True),
    ("jax.hessian(f)(X)", "bwd calls a custom_vjp", True),
    ("jax.jacfwd(jax.grad(f))(X)", "inline", False),
    ("jax.jacfwd(jax.grad(f))(X)", "fwd calls f", True),
    ("jax.jvp(jax.grad(f), (X,), (1.0,))", "fwd calls f", True),
    ("jax.jvp(jax.jit(jax.grad(f)), (X,), (1.0,))", "fwd calls f", False),
    ("jax.jvp(jax.jit(jax.grad(f)), (X,), (1.0,))", "bwd calls a custom_vjp", True),
    ("jax.jacfwd(jax.jit(jax.grad(f)))(X)", "fwd calls f", True),
    ("jax.linearize(jax.grad(f), X)[1](1.0)", "fwd calls f", False),
    ("jax.jacrev(jax.jacrev(f))(X)", "fwd calls f", False),
]


@pytest.mark.parametrize("call, kind, fails", FORWARD_OVER_REVERSE)
def test_vjp315_follows_the_measured_table(call, kind, fails):
    fwd_value = "f(x)" if kind == "fwd calls f" else "jnp.sin(x)"
    bwd_factor = "scale(jnp.cos(x))" if kind == "bwd calls a custom_vjp" else "jnp.cos(x)"
    source = f'''
    import jax
    import jax.numpy as jnp

    @jax.custom_vjp
    def scale(v):
        return v

    scale.defvjp(lambda v: (v, None), lambda _, g: (g,))

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_fwd(x):
        return {fwd_value}, x

    def f_bwd(x, g):
        return ({bwd_factor} * g,)

    f.defvjp(f_fwd, f_bwd)
    X = 0.8
    out = {call}
    '''
    assert bool(_codes(source, "VJP315")) == fails
