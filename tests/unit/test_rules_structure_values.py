"""VJP318-VJP323 and the value-based parts of VJP304/VJP306/VJP312 through the core API: exact
codes, positions and messages where structures come from inferred values rather than literals,
and the look-alikes that stay silent (docs/facts/structure.md has the JAX behaviour)."""

from __future__ import annotations

import textwrap
from typing import List, Tuple

import pytest

from tests.conftest import lint

HEADER = "import functools\nfrom functools import partial\nimport jax\nimport jax.numpy as jnp\n"
FWD_PAIR = ("`TypeError: Custom VJP fwd rule ... must produce a pair ... (equal to the output of the "
            "custom_vjp-decorated function f)`")


def found(source: str, code: str) -> List[Tuple[int, int, str]]:
    diagnostics = lint(HEADER + textwrap.dedent(source), select=[code])
    assert all(d.code == code for d in diagnostics)
    return [(d.location.row - 4, d.location.column, d.message) for d in diagnostics]  # rows in the snippet


def where(source: str, code: str) -> List[Tuple[int, int]]:
    return [(row, col) for row, col, _ in found(source, code)]


VJP = """
@jax.custom_vjp
def f(x):
    return {primal}

def f_fwd(x):
    {body}
    return {out}, x

def f_bwd(x, g):
    return (jnp.zeros_like(x),)

f.defvjp(f_fwd, f_bwd)
"""


# -- VJP318 fwd-out-structure -------------------------------------------------------------------
def test_fwd_out_structure_through_a_helper():
    src = """
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x), jnp.cos(x), x

    def _pair(x):
        return jnp.sin(x), jnp.cos(x)

    def f_fwd(x):
        return _pair(x), x

    def f_bwd(x, g):
        return (g[0] * jnp.cos(x),)

    f.defvjp(f_fwd, f_bwd)
    """
    assert found(src, "VJP318") == [(
        10, 12, "fwd `f_fwd` returns a 2-element tuple as its primal output (`_pair(x)`, which returns "
                "`jnp.sin(x), jnp.cos(x)`), but `f` returns `jnp.sin(x), jnp.cos(x), x` at line 8, a 3-element "
                "tuple: JAX needs fwd's first element to have the decorated function's output structure, so "
                f"`grad(jit(f))` raises {FWD_PAIR} and a plain `grad` silently changes `f`'s output (indexing it "
                "then gives other values); return the full output (a 3-element tuple) as the first element, or "
                "decorate a function that returns only what you differentiate")]


@pytest.mark.parametrize("body, out, expected", [
    ("a, b, c = f(x)", "a", [(8, 12)]),  # one array unpacked from the primal's three
    ("outputs = f(x)", "outputs[1]", [(8, 12)]),  # an indexed call result
    ("a, b, c = f(x)", "(a, b)", [(8, 12)]),  # two of three
    ("outputs = f(x)", "outputs", []),  # the primal's own result
    ("a, b, c = f(x)", "(a, b, c)", []),
    ("outputs = f(x)", "jax.lax.stop_gradient(outputs)", []),  # not a claimed structure
    ("a, b, c = f(x)", "[a, b, c]", []),  # a list of three: VJP319's
])
def test_fwd_out_structure_cases(body, out, expected):
    src = VJP.format(primal="jnp.sin(x), jnp.cos(x), x", body=body, out=out)
    assert where(src, "VJP318") == expected


def test_fwd_out_structure_needs_a_shown_primal():
    helper = VJP.format(primal="_outputs(x)", body="a, b = f(x)", out="a").replace(
        "@jax.custom_vjp", "def _outputs(x):\n    return tuple(x for _ in range(2))\n\n@jax.custom_vjp")
    assert where(helper, "VJP318") == []
    # A container where the primal returns one array: grad(jit(f)) raises JAX's "must produce a
    # pair" TypeError (census row E16, docs/facts/jax-errors.md), so VJP318 claims it at fwd's return.
    array_primal = VJP.format(primal="jnp.sin(x)", body="y = jnp.sin(x)", out="(y, y)")
    assert where(array_primal, "VJP318") == [(8, 12)]


def test_a_redefined_name_registers_its_own_definition():
    src = """
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x), x

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_fwd(x):
        return jnp.sin(x), x

    def f_bwd(x, g):
        return (g * jnp.cos(x),)

    f.defvjp(f_fwd, f_bwd)
    """
    assert where(src, "VJP318") == []


# -- VJP319 fwd-out-container -------------------------------------------------------------------
def test_fwd_out_container_message_and_fix():
    src = """
    @jax.custom_vjp
    def f(x):
        return [x, 2 * x]

    def f_fwd(x):
        return (x,
                2 * x), None

    def f_bwd(_, g):
        return (g[0] + 2 * g[1],)

    f.defvjp(f_fwd, f_bwd)
    """
    assert found(src, "VJP319") == [(
        7, 12, "fwd `f_fwd` returns a 2-element tuple as its primal output (`(x, 2 * x)`), but `f` returns "
               "`[x, 2 * x]` at line 8, a 2-element list: the pytree structures differ, so differentiating `f` "
               "under `grad(jit(...))` or through `jax.checkpoint` in `lax.scan` may raise `TypeError: Custom VJP "
               "fwd rule ... must produce a pair ... (equal to the output of the custom_vjp-decorated function f)` "
               "(plain `grad` works); return a list as fwd's primal output")]
    (d,) = lint(HEADER + textwrap.dedent(src), select=["VJP319"])
    assert d.fix is not None and d.fix.applicability.value == "safe" and d.fix.message == "Return a list, as the primal does"
    assert [e.content for e in d.fix.edits] == ["[x,\n            2 * x]"]


@pytest.mark.parametrize("primal, body, out, expected, fix", [
    ("[x, 2 * x]", "y = 2 * x", "(x, y)", [(8, 12)], "[x, y]"),
    ("x, 2 * x", "pair = [x, 2 * x]", "pair", [(8, 12)], None),  # through a name: no fix
    ("(x,)", "pass", "[x]", [(8, 12)], "(x,)"),  # one element keeps its comma
    ("[x, 2 * x]", "pass", "[x, 2 * x]", [], None),
    ("x, 2 * x", "pair = f(x)", "pair", [], None),
    ("[x, 2 * x]", "pass", "(x, 2 * x, x)", [], None),  # other length: VJP318's
    ("[x, 2 * x]", "pass", "(x,  # first\n            2 * x)", [(8, 12)], None),  # a comment: no fix
])
def test_fwd_out_container_cases(primal, body, out, expected, fix):
    src = VJP.format(primal=primal, body=body, out=out)
    diagnostics = lint(HEADER + textwrap.dedent(src), select=["VJP319"])
    assert [(d.location.row - 4, d.location.column) for d in diagnostics] == expected
    if expected:
        got = diagnostics[0].fix
        assert (got.edits[0].content if got is not None else None) == fix


# -- VJP320 callable-residual ---------------------------------------------------------------------
def test_callable_residual_in_a_dict_and_its_message():
    src = """
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_fwd(x):
        def slope(g):
            return g * jnp.cos(x)
        return jnp.sin(x), {"slope": slope, "x": x}

    def f_bwd(res, g):
        return (res["slope"](g),)

    f.defvjp(f_fwd, f_bwd)
    """
    assert found(src, "VJP320") == [(
        9, 34, "fwd `f_fwd` saves `slope` in its residuals, and it is a Python function (`slope` is the function "
               "defined at line 11): JAX flattens residuals into JAX values, so differentiating `f` (grad, "
               "jit(grad), vmap(grad)) raises `TypeError: Argument '<function ...>' of type '<class 'function'>' "
               "is not a valid JAX type`; keep only arrays in the residuals (bwd receives nondiff arguments as "
               "its leading parameters; rebuild a closure in bwd from the arrays it uses)")]


@pytest.mark.parametrize("residual, expected", [
    ("(x, lambda g: g)", [(8, 28)]),
    ("(x, jnp.cos)", [(8, 28)]),
    ("x", []),
    ("(x, jax.tree_util.Partial(jnp.multiply, 2.0))", []),
    ("(x, jnp.cos(x))", []),
    ("(x, x.shape)", []),
])
def test_callable_residual_cases(residual, expected):
    src = VJP.format(primal="jnp.sin(x)", body="pass", out="jnp.sin(x)").replace("jnp.sin(x), x\n",
                                                                               f"jnp.sin(x), {residual}\n")
    assert where(src, "VJP320") == expected


@pytest.mark.parametrize("call, expected", [
    ("apply(double, x)", [(7, 23)]),  # every call passes a def
    ("apply(lambda v: 2.0 * v, x)", [(7, 23)]),
    ("apply(make(), x)", []),  # unknown
])
def test_callable_residual_nondiff_argument_from_callers(call, expected):
    src = f"""
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def apply(fn, x):
        return fn(x)

    def apply_fwd(fn, x):
        return fn(x), (x, fn)

    def apply_bwd(fn, res, g):
        return (jax.vjp(fn, res[0])[1](g)[0],)

    apply.defvjp(apply_fwd, apply_bwd)

    def double(v):
        return 2.0 * v

    def loss(x):
        return jnp.sum({call})
    """
    assert where(src, "VJP320") == expected


# -- VJP321 jvp-tangent-rank ---------------------------------------------------------------------
JVP = """
@jax.custom_jvp
def f(x):
    return {primal}

@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return {out}, {tangent}
"""


def test_jvp_tangent_rank_message():
    src = JVP.format(primal="jnp.sum(x)", out="f(x)", tangent="jnp.sum(t)[None]")
    assert found(src, "VJP321") == [(
        9, 18, "jvp rule `f_jvp` of custom_jvp `f` returns a tangent `jnp.sum(t)[None]` of rank 1 with a primal "
               "output `f(x)` (`f(x)` (`jnp.sum(x)` reduces over every axis)) of a scalar: the tangent must have "
               "the primal output's shape, so differentiating `f` (jvp, grad, jacfwd) raises `TypeError: Custom JVP "
               "rule must produce primal and tangent outputs with corresponding shapes and dtypes ...`; index or "
               "reduce the tangent as the primal output is")]


@pytest.mark.parametrize("primal, out, tangent, fires", [
    ("x[0] * 2.0", "f(x)", "2.0 * t", True),
    ("jnp.tanh(x[:, None])", "jnp.tanh(x[:, None])", "t * (1 - jnp.tanh(x) ** 2)", True),
    ("x[0] * 2.0", "x[0] * 2.0", "2.0 * t[0]", False),
    ("jnp.sum(x[0])", "f(x)", "jnp.sum(t[0]) + t[0, 0]", False),  # scalar vs rank(x) - 2: unknown
    ("jnp.sum(x)", "f(x)", "t", False),  # right for a scalar x
    ("x.reshape(-1)", "f(x)", "t", False),  # reshape: unknown
    ("jnp.sum(x, axis=0)", "f(x)", "t[0]", False),  # an axis: unknown
    ("x[i]", "f(x)", "t", False),  # an array index: unknown
])
def test_jvp_tangent_rank_cases(primal, out, tangent, fires):
    src = JVP.format(primal=primal.replace("x[i]", "x[jnp.argmax(x)]"), out=out, tangent=tangent)
    assert bool(where(src, "VJP321")) is fires


def test_jvp_tangent_rank_reads_indexed_primals_and_nondiff():
    src = """
    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def f(n, x):
        return 2.0 * x[0]

    @f.defjvp
    def f_jvp(n, primals, tangents):
        x, t = primals[0], tangents[0]
        return f(n, x), 2.0 * t
    """
    assert where(src, "VJP321") == [(9, 21)]


# -- VJP322 bwd-cotangent-rank ---------------------------------------------------------------------
def test_bwd_cotangent_rank_message_for_a_reduction():
    src = """
    @jax.custom_vjp
    def f(x, y):
        return jnp.mean(x) * 2.0

    def f_fwd(x, y):
        return f(x, y), None

    def f_bwd(_, g):
        return (2.0 * g, None)

    f.defvjp(f_fwd, f_bwd)
    """
    assert found(src, "VJP322") == [(
        10, 13, "bwd `f_bwd` returns `2.0 * g` as the cotangent of `x`, but it has a scalar (`g` is the cotangent "
                "of `f`'s output, `jnp.mean(x) * 2.0`) where `x`'s cotangent needs `x`'s shape: unless `x` is a "
                "scalar, differentiating `f` may raise `ValueError: Custom VJP bwd rule must produce an output "
                "with the same type as the args tuple of the primal function, but at output[0] the bwd rule "
                "produced an output of type float32[] corresponding to an input of type float32[...], so the "
                "shapes do not match`; broadcast it to `x`'s shape (save `jnp.shape(x)` in the residuals and "
                "return `jnp.broadcast_to(2.0 * g, shape)`)")]


def test_bwd_cotangent_rank_message_for_an_index():
    src = VJP.format(primal="x[0]", body="pass", out="x[0]").replace("(jnp.zeros_like(x),)", "(g,)")
    assert found(src, "VJP322") == [(
        11, 13, "bwd `f_bwd` returns `g` as the cotangent of `x`, but it has the rank of `x` - 1 (`g` is the "
                "cotangent of `f`'s output, `x[0]`) where `x`'s cotangent needs `x`'s shape: differentiating `f` "
                "raises `ValueError: Custom VJP bwd rule must produce an output with the same type as the args "
                "tuple of the primal function, but at output[0] the bwd rule produced an output of type float32[] "
                "corresponding to an input of type float32[...], so the shapes do not match`; give the cotangent "
                "`x`'s shape (scatter it back into `jnp.zeros_like(x)` at the indexed place)")]


@pytest.mark.parametrize("primal, ret, fires", [
    ("jnp.sum(x)", "(g,)", True),
    ("jnp.sum(x)", "(g / n,)", True),  # n: a Python scalar residual
    ("jnp.sum(x)", "(jnp.broadcast_to(g, x.shape),)", False),
    ("jnp.sum(x)", "(g * jnp.ones_like(x),)", False),
    ("jnp.sum(x)", "(g * res,)", False),  # an array residual: unknown
    ("jnp.sin(x)", "(g * jnp.cos(x),)", False),
    ("jnp.sum(x, axis=0)", "(g,)", True),  # an axis: one fewer than `x`
    ("jnp.sum(x, axis=0, keepdims=True)", "(jnp.broadcast_to(g, x.shape),)", False),
    ("jnp.sum(x, axis=k)", "(g,)", False),  # an axis in a name: unknown
    ("jnp.sum(x)", "(jnp.zeros(3),)", False),  # does not use g
])
def test_bwd_cotangent_rank_cases(primal, ret, fires):
    src = f"""
    @jax.custom_vjp
    def f(x):
        return {primal}

    def f_fwd(x):
        return f(x), (x.size, x)

    def f_bwd(res, g):
        n, res = res
        return {ret}

    f.defvjp(f_fwd, f_bwd)
    """
    if "g / n" in ret:
        src = src.replace("(x.size, x)", "x.size").replace("def f_bwd(res, g):\n        n, res = res",
                                                             "def f_bwd(n, g):\n        pass")
    assert bool(where(src, "VJP322")) is fires


# -- VJP323 defjvps-int-argument -------------------------------------------------------------------
def test_defjvps_int_argument_message_through_grad_of_a_call():
    src = """
    @jax.custom_jvp
    def f(n, x):
        return n * x

    f.defjvps(lambda t, out, n, x: t * x, lambda t, out, n, x: n * t)

    y = jax.grad(f, 1)(2, 3.0)
    """
    assert found(src, "VJP323") == [(
        6, 11, "`f` is called with the int `2` for `n` (line 12), and the defjvps rule for `n` computes with its "
               "tangent (`t * x`): an int argument's tangent is a float0 zero, so differentiating that call may "
               "raise `TypeError: Called multiply with a float0 array ...` (`UFuncTypeError: ufunc 'multiply' did "
               "not contain a loop ...` with Python scalars); use `None` as `n`'s rule, or pass a float")]


@pytest.mark.parametrize("rules, call, expected", [
    ("lambda t, out, n, x: t * x, lambda t, out, n, x: n * t", "f(3, 2.0)", [(6, 11)]),
    ("lambda t, out, n, x: t * x, lambda t, out, n, x: n * t", "jax.vjp(f, 3, 2.0)", [(6, 11)]),
    ("lambda t, out, n, x: t, lambda t, out, n, x: n * t", "f(True and 3, 2.0)", []),  # not an int literal
    ("None, lambda t, out, n, x: n * t", "f(3, 2.0)", []),
    ("lambda t, out, n, x: jnp.zeros_like(out), lambda t, out, n, x: n * t", "f(3, 2.0)", []),
    ("lambda t, out, n, x: t * x, lambda t, out, n, x: n * t", "f(3.0, 2.0)", []),
    ("lambda t, out, n, x: t * x, lambda t, out, n, x: n * t", "f(2.0, 3)", []),  # x's rule reads t: n*t
])
def test_defjvps_int_argument_cases(rules, call, expected):
    src = f"""
    @jax.custom_jvp
    def f(n, x):
        return n * x

    f.defjvps({rules})

    y = {call}
    """
    got = where(src, "VJP323")
    if call == "f(2.0, 3)":
        assert got == [(6, 39)]  # the int is x's: its rule `n * t` reads the tangent
    else:
        assert got == expected


# -- VJP312 defjvps count, VJP304/VJP306 through values ----------------------------------------------
def test_defjvps_count_message_and_silent_forms():
    src = """
    @jax.custom_jvp
    def f(x, w):
        return x * w

    f.defjvps(lambda t, out, x, w: t * w)
    """
    assert found(src, "VJP312") == [(
        6, 1, "`f.defjvps(...)` gives 1 tangent function but `f` has 2 positional parameters (x, w): JAX pairs "
              "them one to one, so differentiating `f` (jvp, grad, jacfwd) raises `ValueError: safe_zip() argument "
              "1 has length 1 but argument 0 has length 2`; pass one function per parameter, `None` for a "
              "parameter without a tangent rule")]
    for ok in ("f.defjvps(lambda t, out, x, w: t * w, None)", "f.defjvps(*RULES)"):
        assert where(src.replace("f.defjvps(lambda t, out, x, w: t * w)", ok), "VJP312") == []
    varargs = src.replace("def f(x, w):", "def f(*xs):").replace("return x * w", "return xs[0]")
    assert where(varargs, "VJP312") == []


def test_fwd_not_pair_through_a_helper():
    src = """
    def _forward(x):
        return jnp.sin(x), x, jnp.cos(x)

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_fwd(x):
        return _forward(x)

    def f_bwd(res, g):
        return (res[1] * g,)

    f.defvjp(f_fwd, f_bwd)
    """
    ((row, col, message),) = found(src, "VJP304")
    assert (row, col) == (10, 12)
    assert message.startswith("fwd `f_fwd` returns a 3-element tuple (`_forward(x)`, which returns `jnp.sin(x), "
                              "x, jnp.cos(x)`), not a pair (primal_out, residuals): differentiating `f` raises")
    pair = src.replace("return jnp.sin(x), x, jnp.cos(x)", "return jnp.sin(x), jnp.cos(x)")
    assert where(pair, "VJP304") == []


def test_bwd_return_length_through_a_helper_names_the_pytree_argument():
    src = """
    @jax.custom_vjp
    def f(params):
        w, b = params
        return w * 2.0 + b

    def f_fwd(params):
        return f(params), None

    def _grads(g):
        return 2.0 * g, g

    def f_bwd(_, g):
        return _grads(g)

    f.defvjp(f_fwd, f_bwd)
    """
    ((row, col, message),) = found(src, "VJP306")
    assert (row, col) == (14, 12)
    assert message.startswith("bwd `f_bwd` returns 2 cotangents (`_grads(g)`, which returns `2.0 * g, g`, a "
                              "2-element tuple) but `f` has 1 differentiable argument (params);")
    assert message.endswith("(`params` is one pytree argument, unpacked as `w, b = params`: its cotangent is one "
                            "element with its structure, `((d_0, d_1),)`)")
    nested = src.replace("return 2.0 * g, g", "return ((2.0 * g, g),)")
    assert where(nested, "VJP306") == []


def test_bwd_bare_array_through_reassigned_names():
    src = """
    @jax.custom_vjp
    def f(x, y):
        return jnp.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (x, y)

    def f_bwd(res, g):
        x, y = res
        grad = g * jnp.cos(x)
        grad = grad * y
        return grad

    f.defvjp(f_fwd, f_bwd)
    """
    assert found(src, "VJP307") == [(
        13, 12, "bwd `f_bwd` returns `grad` (an array: every assignment of `grad` in the rule is one), not a tuple: "
                "JAX needs a tuple or list with one cotangent (or None) per differentiable argument of `f` (x, y), "
                "and differentiating `f` raises `TypeError: Custom VJP bwd rule must produce an output with the "
                "same container (pytree) structure as the args tuple of the primal function ...`; return a tuple "
                "of cotangents")]
    augmented = src.replace("grad = grad * y", "grad += y")
    assert where(augmented, "VJP307") == [(13, 12)]
    to_tuple = src.replace("grad = grad * y", "grad = (grad * y, None)")
    assert where(to_tuple, "VJP307") == []
    from_param = src.replace("grad = g * jnp.cos(x)", "grad = res")
    assert where(from_param, "VJP307") == []


def test_jvp_rule_not_pair_through_a_helper():
    src = """
    def _outputs(x, t):
        return jnp.sin(x), jnp.cos(x) * t, x

    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return _outputs(x, t)
    """
    ((row, col, message),) = found(src, "VJP313")
    assert (row, col) == (12, 12)
    assert message.startswith("jvp rule `f_jvp` of custom_jvp `f` returns `_outputs(x, t)`, which is a tuple of 3 "
                              "elements (`_outputs(x, t)`, which returns `jnp.sin(x), jnp.cos(x) * t, x`), not a pair")
    pair = src.replace("return jnp.sin(x), jnp.cos(x) * t, x", "return jnp.sin(x), jnp.cos(x) * t")
    assert where(pair, "VJP313") == []


def test_rebound_names_lose_their_rank_and_decorated_functions_are_not_claimed():
    rebound = JVP.format(primal="x[0]", out="f(x)", tangent="t").replace(
        "def f(x):\n    return x[0]", "def f(x):\n    x = x[None]\n    return x[0]")
    assert where(rebound, "VJP321") == []
    decorated = """
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_fwd(x):
        @some_pytree_wrapper
        def slope(g):
            return g * jnp.cos(x)
        return jnp.sin(x), slope

    def f_bwd(slope, g):
        return (slope(g),)

    f.defvjp(f_fwd, f_bwd)
    """
    assert where(decorated, "VJP320") == []
    assert where(decorated.replace("        @some_pytree_wrapper\n", ""), "VJP320") == [(9, 24)]


def test_defjvps_of_a_redefined_name_is_counted_against_its_own_definition():
    """A notebook that redefines `f` (as JAX's custom-derivatives tutorial does) registers each one."""
    src = """
    @jax.custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    f.defjvps(lambda t, out, x, y: jnp.cos(x) * t * y, lambda t, out, x, y: jnp.sin(x) * t)

    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvps(lambda t, out, x: jnp.cos(x) * t)

    y = f(2)
    """
    assert where(src, "VJP312") == []
    assert where(src, "VJP323") == [(12, 11)]  # `f(2)` calls the one-argument f, whose rule reads t
