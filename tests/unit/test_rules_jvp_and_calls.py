"""VJP310-VJP316 through the core API: exact codes, positions and messages, and the look-alikes
each rule must leave alone."""

from __future__ import annotations

import textwrap
from typing import List, Tuple

import pytest

from tests.conftest import lint
from vjplint.rules.registry import all_rules

CODES = ("VJP310", "VJP311", "VJP312", "VJP313", "VJP314", "VJP315", "VJP316")


def found(source: str, code: str) -> List[Tuple[int, int, str]]:
    diagnostics = lint(textwrap.dedent(source), select=[code])
    assert all(d.code == code for d in diagnostics)
    return [(d.location.row, d.location.column, d.message) for d in diagnostics]


def where(source: str, code: str) -> List[Tuple[int, int]]:
    return [(row, col) for row, col, _ in found(source, code)]


@pytest.mark.parametrize("code", CODES)
def test_documented_examples(code):
    rule = all_rules()[code]
    assert rule.INVALID and rule.VALID
    for snippet in rule.INVALID:
        assert found(snippet, code), snippet
    for snippet in rule.VALID:
        assert found(snippet, code) == [], snippet
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in (rule.__doc__ or "")


# -- VJP310 primal-keyword-only ----------------------------------------------------------------
KWONLY = """
import functools
import jax

@jax.custom_vjp
def scaled(x, *, scale=1.0, **extra):
    return x * scale

scaled.defvjp(lambda x: (x, None), lambda _, g: (g,))

def loss(x):
    a = scaled(x, scale=2.0)
    b = scaled(x, mode="fast")
    c = scaled(x=x)
    d = scaled(x, **{"scale": 3.0})
    return functools.partial(scaled, scale=0.5)(a + b + c + d)
"""


def test_vjp310_keyword_only_and_kwargs_passed_by_keyword():
    result = found(KWONLY, "VJP310")
    assert [(r, c) for r, c, _ in result] == [(12, 19), (13, 19), (16, 38)]
    assert result[0][2] == (
        "`scaled(..., scale=...)` passes keyword-only parameter `scale` of custom_vjp `scaled` by keyword: JAX "
        "raises TypeError \"The following keyword arguments could not be resolved to positions: scale\" at every "
        "such call, eager included. Make `scale` a positional parameter (add it to nondiff_argnums if it is static)")
    assert result[1][2].startswith("`scaled(..., mode=...)` passes `mode`, which lands in `**extra`, of custom_vjp")
    assert result[1][2].endswith("Replace `**extra` with explicit positional parameters (add them to "
                                 "nondiff_argnums if they are static)")
    assert result[2][2].startswith("`functools.partial(..., scale=...)` passes keyword-only parameter `scale`")


def test_vjp310_required_keyword_only_is_reported_once_at_the_definition():
    source = """
    import jax

    @jax.custom_jvp
    def safe_norm(v, *, eps):
        return v

    safe_norm.defjvp(lambda p, t: (p[0], t[0]))
    y = safe_norm(1.0, eps=1e-6)
    """
    assert found(source, "VJP310") == [(5, 21,
        "keyword-only parameter `eps` of custom_jvp `safe_norm` has no default, so no call can succeed: JAX binds "
        "custom_jvp arguments to positions, and passing `eps=` raises TypeError \"The following keyword arguments "
        "could not be resolved to positions: eps\" while omitting it raises \"missing a required argument: 'eps'\". "
        "Make `eps` a positional parameter (before the `*`)")]


@pytest.mark.parametrize("source", [
    # a keyword-only default nobody passes
    "import jax\n@jax.custom_vjp\ndef f(x, *, s=1.0):\n    return x * s\nf.defvjp(lambda x: (x, None), lambda _, g: (g,))\n"
    "y = f(2.0)\n",
    # keywords that name positional(-or-keyword) parameters resolve fine, also with **kwargs present
    "import jax\n@jax.custom_vjp\ndef f(x, y, **kw):\n    return x * y\n"
    "f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], g * r[0]))\nz = f(y=1.0, x=2.0)\n",
    # `**options` at the call hides the names: not provable
    "import jax\n@jax.custom_vjp\ndef f(x, *, s=1.0):\n    return x * s\nf.defvjp(lambda x: (x, None), lambda _, g: (g,))\n"
    "def g(x, **options):\n    return f(x, **options)\n",
    # a local function that happens to be called custom_vjp
    "def custom_vjp(fn):\n    return fn\n@custom_vjp\ndef f(x, *, s):\n    return x * s\ny = f(1.0, s=2.0)\n",
])
def test_vjp310_silent(source):
    assert found(source, "VJP310") == []


# -- VJP311 remat-symbolic-zeros ---------------------------------------------------------------
def test_vjp311_keywords_positions_and_constants():
    source = """
    import jax
    import ops

    ZEROS = True

    @jax.custom_vjp
    def f(x):
        return x

    def register():
        f.defvjp(lambda x: (x, None), lambda _, g: (g,), symbolic_zeros=ZEROS, optimize_remat=True)

    f.defvjp(lambda x: (x, None), lambda _, g: (g,), 1, True)
    ops.gelu.defvjp(ops.fwd, ops.bwd, symbolic_zeros=True, optimize_remat=True)
    """
    result = found(source, "VJP311")
    assert [(r, c) for r, c, _ in result] == [(12, 5), (14, 1), (15, 1)]
    assert result[0][2] == (
        "`f.defvjp(...)` of custom_vjp `f` sets both symbolic_zeros and optimize_remat (`ZEROS`, `True`): JAX raises "
        "NotImplementedError \"remat optimization for custom_vjp does not support symbolic zeros\" at this call. "
        "Drop one of them")
    assert result[2][2].startswith("`ops.gelu.defvjp(...)` of `ops.gelu` sets both")


@pytest.mark.parametrize("flags", [
    "symbolic_zeros=True", "optimize_remat=True", "symbolic_zeros=True, optimize_remat=False",
    "symbolic_zeros=flag, optimize_remat=True", "*flags", "**opts", "False, True",
])
def test_vjp311_silent(flags):
    source = ("import jax\n@jax.custom_vjp\ndef f(x):\n    return x\n"
              f"def build(flag, flags, opts):\n    f.defvjp(lambda x: (x, None), lambda _, g: (g,), {flags})\n")
    assert found(source, "VJP311") == []


# -- VJP312 jvp-rule-arity ---------------------------------------------------------------------
def test_vjp312_decorator_form_message():
    source = """
    import jax

    @jax.custom_jvp
    def softplus(x):
        return x

    @softplus.defjvp
    def softplus_jvp(primals):
        return primals[0], primals[0]
    """
    assert found(source, "VJP312") == [(9, 5,
        "jvp rule `softplus_jvp` of custom_jvp `softplus` takes 1 positional parameter (primals), but JAX calls it "
        "with 2 positional arguments (primals, tangents), so differentiating `softplus` (jvp, grad, jacfwd) raises "
        "`TypeError: softplus_jvp() takes 1 positional argument but 2 were given`; give it the parameters "
        "(primals, tangents)")]


def test_vjp312_nondiff_partial_lambda_and_keyword_only():
    source = """
    import functools
    from functools import partial
    import jax

    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def poly(order, x):
        return x

    def poly_jvp(primals, tangents):
        return primals[0], tangents[0]

    poly.defjvp(poly_jvp)

    def generic(fn, scale, primals, tangents):
        return fn(*primals), tangents[0]

    @jax.custom_jvp
    def g(x):
        return x

    g.defjvp(functools.partial(generic, abs))

    @jax.custom_jvp
    def h(x, y):
        return x

    h.defjvp(lambda x, y, xd, yd: (x, xd))

    @jax.custom_jvp
    def k(x):
        return x

    @k.defjvp
    def k_jvp(primals, tangents, *, eps):
        return primals[0], tangents[0]
    """
    result = found(source, "VJP312")
    assert [(r, c) for r, c, _ in result] == [(10, 5), (22, 10), (28, 10), (35, 5)]
    assert "(order, primals, tangents) (the nondiff values first, in index order)" in result[0][2]
    assert "`TypeError: poly_jvp() takes 2 positional arguments but 3 were given`" in result[0][2]
    assert "takes 3 positional parameters (scale, primals, tangents) after binding 1 leading argument" in result[1][2]
    assert "missing 1 required positional argument: 'tangents'" in result[1][2]
    assert result[2][2].startswith("the jvp rule lambda of custom_jvp `h` takes 4 positional parameters")
    assert "has the required keyword-only parameter `eps`" in result[3][2]
    assert "`TypeError: k_jvp() missing 1 required keyword-only argument: 'eps'`" in result[3][2]


def test_vjp312_silent_variants():
    source = """
    from functools import partial
    import jax

    @partial(jax.custom_jvp, nondiff_argnums=(1,))
    def a(x, n):
        return x

    @a.defjvp
    def a_jvp(n, primals, tangents):
        return primals[0], tangents[0]

    @jax.custom_jvp
    def b(x):
        return x

    b.defjvp(lambda *args: (args[0][0], args[1][0]))

    @jax.custom_jvp
    def c(x):
        return x

    @c.defjvp
    def c_jvp(primals, tangents, tiny=1e-30):
        return primals[0], tangents[0]

    class Rules:
        def install(self):
            c.defjvp(self.method_jvp)

        def method_jvp(self, primals, tangents):
            return primals[0], tangents[0]

    @partial(jax.custom_jvp, nondiff_argnums=SOMEWHERE)
    def d(n, x):
        return x

    d.defjvp(lambda primals, tangents: (primals[0], tangents[0]))

    @jax.custom_jvp
    def e(x):
        return x

    @e.defjvp
    @some_decorator
    def e_jvp(primals):
        return primals
    """
    assert found(source, "VJP312") == []


# -- VJP313 jvp-rule-not-pair ------------------------------------------------------------------
def test_vjp313_not_pairs():
    source = """
    import jax
    import jax.numpy as jnp

    @jax.custom_jvp
    def f(x):
        return x

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        if x.ndim:
            return jnp.cos(x) * t
        if t is None:
            return
        out = jnp.stack([x, t])
        if x.size > 3:
            return out
        return x, t, x

    @jax.custom_jvp
    def g(x):
        return x

    g.defjvp(lambda p, t: [p[0]])
    """
    result = found(source, "VJP313")
    assert [(r, c) for r, c, _ in result] == [(13, 16), (15, 9), (18, 16), (19, 12), (25, 23)]
    assert result[0][2] == (
        "jvp rule `f_jvp` of custom_jvp `f` returns `jnp.cos(x) * t`, which is an array, not a pair: "
        "differentiating `f` (jvp, grad, jacfwd) raises TypeError \"Custom JVP rule f_jvp for function f must "
        "produce a pair (list or tuple of length two) representing primal and tangent outputs\". Return "
        "`(primal_out, tangent_out)`")
    assert "returns `return`, which is None" in result[1][2]
    assert "returns `out`, which is an array" in result[2][2]
    assert "which is a tuple of 3 elements" in result[3][2]
    assert result[4][2].startswith("the jvp rule lambda of custom_jvp `g` returns `[p[0]]`, which is a list of "
                                   "1 element")
    assert "Custom JVP rule <lambda> for function g" in result[4][2]


def test_vjp313_silent_pairs():
    source = """
    import jax
    import jax.numpy as jnp

    def helper(a, b):
        return a, b

    @jax.custom_jvp
    def f(x):
        return x

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        def inner():
            return jnp.sin(x)
        if x.ndim == 0:
            return jax.jvp(jnp.sin, primals, tangents)
        if x.ndim == 1:
            return (x,) + (t,)
        if x.ndim == 2:
            return (*helper(x, t),)
        pair = x, t
        if x.ndim == 3:
            return pair
        if x.ndim == 4:
            return [x, t]
        return helper(x, t)
    """
    assert found(source, "VJP313") == []


# -- VJP314 defjvps-with-nondiff ---------------------------------------------------------------
def test_vjp314_call_and_decorator_forms():
    source = """
    from functools import partial
    import jax

    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def power(n, x):
        return x ** n

    power.defjvps(lambda x_dot, out, n, x: n * x_dot)

    def make(k):
        f = jax.custom_jvp(lambda x, axis: x, nondiff_argnames="axis")

        @f.defjvps
        def f_x(x_dot, out, x, axis):
            return x_dot
        return f
    """
    result = found(source, "VJP314")
    assert [(r, c) for r, c, _ in result] == [(9, 1), (14, 6)]
    assert result[0][2] == (
        "`power.defjvps(...)` on custom_jvp `power`, which has nondiff arguments (`n`): JAX raises TypeError "
        "\"Can't use ``defjvps`` with ``nondiff_argnums``.\" at this call. Register one rule with `power.defjvp`, "
        "taking the nondiff values first: `(nondiff..., primals, tangents)`")
    assert result[1][2].startswith("`@f.defjvps` on custom_jvp `f`, which has nondiff arguments (`axis`)")


@pytest.mark.parametrize("spec", ["", "nondiff_argnums=()", "nondiff_argnums=0", "nondiff_argnames=('nope',)"])
def test_vjp314_silent(spec):
    source = ("import jax\nfrom functools import partial\n"
              f"@partial(jax.custom_jvp, {spec})\ndef f(n, x):\n    return x\n"
              "f.defjvps(lambda n_dot, out, n, x: n_dot, lambda x_dot, out, n, x: x_dot)\n")
    assert found(source, "VJP314") == []


# -- VJP315 forward-mode-on-vjp ----------------------------------------------------------------
VJP_HEADER = """
from functools import partial
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))

@jax.custom_jvp
def smooth(x):
    return x

smooth.defjvp(lambda p, t: (p[0], t[0]))

def uses_f(w, x):
    return w * f(x)
"""


def test_vjp315_direct_and_through_wrappers():
    source = VJP_HEADER + """
def check(x, t, w):
    a = jax.jacfwd(f)(x)
    b = jax.jvp(jax.jit(f), (x,), (t,))
    c = jax.jvp(lambda v: jnp.sum(f(v) ** 2), (x,), (t,))
    d = jax.jacfwd(uses_f, argnums=1)(w, x)
    e = jax.linearize(f, x)[1](t)
    _, lin = jax.linearize(partial(uses_f, w), x)
    return lin(t)
"""
    result = found(source, "VJP315")
    assert [(r, c) for r, c, _ in result] == [(22, 20), (23, 17), (24, 17), (25, 20), (26, 23), (27, 28)]
    assert result[0][2] == (
        "`jax.jacfwd` pushes tangents through `f`, but `f` is a custom_vjp function: JAX raises TypeError \"can't "
        "apply forward-mode autodiff (jvp) to a custom_vjp function.\". Use `jax.jacrev`, or give the function a "
        "custom_jvp")
    assert "`jax.jit(f)`, but `f` is a custom_vjp function" in result[1][2]
    assert "the lambda calls custom_vjp `f` (line 24) with `v`, which carries the tangent" in result[2][2]
    assert "`uses_f` calls custom_vjp `f` (line 19) with `x`, which carries the tangent" in result[3][2]
    assert result[4][2].startswith("the linear function from `jax.linearize` (used at line 26) pushes tangents")
    assert result[5][2].startswith("the linear function from `jax.linearize` (used at line 28) pushes tangents "
                                   "through `partial(uses_f, w)`")


def test_vjp315_decorator():
    source = VJP_HEADER + """
@partial(jax.jacfwd, argnums=1)
def sensitivity(w, x):
    return w * f(x)

@jax.jacfwd
def fine(w, x):
    return w * f(x)
"""
    result = found(source, "VJP315")
    assert [(r, c) for r, c, _ in result] == [(21, 2)]
    assert result[0][2].startswith("`@jax.jacfwd` differentiates `sensitivity` in forward mode, but `sensitivity` "
                                   "calls custom_vjp `f` (line 23) with `x`")


def test_vjp315_silent_look_alikes():
    source = VJP_HEADER + """
C = jnp.ones(3)

def check(x, t, w):
    a = jax.hessian(lambda v: jnp.sum(f(v)))(x)
    b = jax.jacrev(f)(x)
    c = jax.jvp(smooth, (x,), (t,))
    d = jax.jvp(lambda v: v * f(C), (x,), (t,))
    e = jax.jvp(lambda v: f(jax.lax.stop_gradient(v)), (x,), (t,))
    g = jax.jacfwd(uses_f)(w, x)
    y, _ = jax.linearize(f, x)
    z = jax.linearize(f, x)[0]
    h = jax.jacfwd(jax.grad(lambda v: jnp.sum(f(v))))(x)
    return a, b, c, d, e, g, y, z, h
"""
    assert found(source, "VJP315") == []


def test_vjp315_objects_whose_call_runs_a_custom_vjp():
    source = VJP_HEADER + """
class Layer:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return uses_f(self.w, x)

class Op:
    def __init__(self):
        self.apply = jax.custom_vjp(self._impl)
        self.apply.defvjp(self._fwd, self._bwd)

    def _impl(self, x):
        return jnp.cos(x)

    def _fwd(self, x):
        return jnp.cos(x), x

    def _bwd(self, x, g):
        return (-jnp.sin(x) * g,)

    def __call__(self, x):
        return self.apply(x)

OP = Op()

def check(x, t):
    layer = Layer(2.0)
    a = jax.jvp(OP, (x,), (t,))
    b = jax.jacfwd(lambda v: layer(v))(x)
    c = jax.jacrev(OP)(x)
    d = jax.jvp(lambda v: layer(x) * v, (x,), (t,))
    return a, b, c, d
"""
    result = found(source, "VJP315")
    assert [(r, c) for r, c, _ in result] == [(49, 17), (50, 20)]
    assert result[0][2] == (
        "`jax.jvp` pushes tangents through `OP`, but `OP` is an instance of `Op` and `Op.__call__` calls custom_vjp "
        "`self.apply` (line 43) with `x`, which carries the tangent: JAX raises TypeError \"can't apply forward-mode "
        "autodiff (jvp) to a custom_vjp function.\". Use reverse mode (`jax.vjp`, `jax.jacrev`), or give the "
        "function a custom_jvp")
    assert ("but the lambda calls `layer` (line 50), an instance of `Layer`, with `v`, which carries the tangent, "
            "and `Layer.__call__` calls `uses_f` (line 26) with `x`, which carries the tangent, and `uses_f` calls "
            "custom_vjp `f` (line 19) with `x`, which carries the tangent: JAX raises") in result[1][2]


# -- VJP316 fwd-params-reordered ---------------------------------------------------------------
def test_vjp316_swapped_and_rotated():
    source = """
    import jax
    import jax.numpy as jnp
    from functools import partial

    @jax.custom_vjp
    def f(x, y):
        return x * jnp.sin(y)

    def f_fwd(y, x):
        return x * jnp.sin(y), (x, y)

    f.defvjp(f_fwd, lambda r, g: (g, g))

    @jax.custom_vjp
    def h(q, k, t):
        return q

    def h_fwd(cfg, k, t, q):
        return q, None

    h.defvjp(partial(h_fwd, None), lambda r, g: (g, g, g))
    """
    result = found(source, "VJP316")
    assert [(r, c) for r, c, _ in result] == [(10, 11), (19, 16)]
    assert result[0][2] == (
        "fwd `f_fwd` of custom_vjp `f` names its parameters `(y, x)`, the primal's `(x, y)` in another order, but "
        "JAX calls fwd positionally with the primal's arguments: `y` receives the caller's `x`, `x` receives the "
        "caller's `y`, so values and gradients are silently wrong. Rename fwd's parameters to `(x, y)` (and check "
        "its body)")
    assert "names its parameters `(k, t, q)`, the primal's `(q, k, t)`" in result[1][2]


@pytest.mark.parametrize("fwd", [
    "def f_fwd(x, y):\n    return f(x, y), None",          # same order
    "def f_fwd(a, b):\n    return f(a, b), None",          # other names
    "def f_fwd(x, z):\n    return f(x, z), None",          # not a permutation
    "def f_fwd(*args):\n    return f(*args), None",        # *args
    "def f_fwd(y, x):\n    return f(y, x), None",          # consistent positional reading
])
def test_vjp316_silent(fwd):
    source = f"import jax\n@jax.custom_vjp\ndef f(x, y):\n    return x * y\n{fwd}\nf.defvjp(f_fwd, lambda r, g: (g, g))\n"
    assert found(source, "VJP316") == []


def test_vjp316_silent_with_primal_varargs():
    source = ("import jax\n@jax.custom_vjp\ndef f(x, y, *rest):\n    return x * y\n"
              "def f_fwd(y, x, *rest):\n    return x * y, None\nf.defvjp(f_fwd, lambda r, g: (g, g))\n")
    assert found(source, "VJP316") == []


# -- contexts where the error is wanted or never raised ----------------------------------------
EXPECTED_FAILURES = """
import unittest
import jax
import pytest

@jax.custom_vjp
def f(x, *, s=1.0):
    return x * s

f.defvjp(lambda x: (x, None), lambda _, g: (g,))

def test_kw():
    with pytest.raises(TypeError):
        f(1.0, s=2.0)
    {guard}
        jax.jvp(f, (1.0,), (1.0,))

class T(unittest.TestCase):
    def test_jacfwd(self):
        with self.assertRaisesRegex(TypeError, "forward-mode"):
            jax.jacfwd(f)(1.0)

def staged(x):
    return jax.make_jaxpr(lambda v: jax.jvp(f, (v,), (v,)))(x), jax.eval_shape(shapes, x)

def shapes(v):
    return jax.jvp(f, (v,), (v,))
"""


def test_expected_failure_and_abstract_tracing_are_exempt():
    source = EXPECTED_FAILURES.replace("{guard}", "with pytest.raises(TypeError):")
    assert found(source, "VJP310") == [] and found(source, "VJP315") == []
    # the same call outside the `with` is reported (the exemption is not blanket)
    outside = EXPECTED_FAILURES.replace("{guard}", "if True:")
    assert where(outside, "VJP315") == [(16, 17)]
