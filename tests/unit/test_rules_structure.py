"""VJP301-VJP309 through the core API: exact codes, positions and messages for the counting
cases JAX is strict about (defaults, `*args`, partial, lambdas, keyword registration, methods,
nondiff slots) and the look-alikes the rules must leave alone."""

from __future__ import annotations

import textwrap
from typing import List, Tuple

import pytest

from tests.conftest import lint
from vjplint.rules.registry import all_rules

CODES = ("VJP301", "VJP302", "VJP303", "VJP304", "VJP305", "VJP306", "VJP307", "VJP308", "VJP309")
BWD_TREE = ("`TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) structure "
            "as the args tuple of the primal function ...`")
HEADER = "import functools\nfrom functools import partial\nimport jax\nimport jax.numpy as jnp\n"


def found(source: str, code: str) -> List[Tuple[int, int, str]]:
    diagnostics = lint(HEADER + textwrap.dedent(source), select=[code])
    assert all(d.code == code for d in diagnostics)
    return [(d.location.row - 4, d.location.column, d.message) for d in diagnostics]  # rows in the snippet


def where(source: str, code: str) -> List[Tuple[int, int]]:
    return [(row, col) for row, col, _ in found(source, code)]


def structure(source: str) -> List[Tuple[str, int, int]]:
    """(code, row, column) of every VJP301-VJP309 diagnostic."""
    diagnostics = lint(HEADER + textwrap.dedent(source), select=list(CODES))
    return [(d.code, d.location.row - 4, d.location.column) for d in diagnostics]


def fix_of(source: str, code: str) -> Tuple[str, str]:
    (d,) = lint(HEADER + textwrap.dedent(source), select=[code])
    assert d.fix is not None and len(d.fix.edits) == 1
    return d.fix.applicability.value, d.fix.edits[0].content


@pytest.mark.parametrize("code", CODES)
def test_documented_examples(code):
    rule = all_rules()[code]
    assert rule.INVALID and rule.VALID
    for snippet in rule.INVALID:
        assert lint(snippet, select=[code]), snippet
    for snippet in rule.VALID:
        assert lint(snippet, select=list(CODES)) == [], snippet
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in (rule.__doc__ or "")


# -- VJP303 fwd-arity: defaults, nondiff, *args, partial, methods -----------------------------------
def test_fwd_arity_counts_defaults_and_nondiff():
    src = """
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(n, x, eps=1e-6):
        return x * n

    def f_fwd(n, x):
        return f(n, x), x

    def f_bwd(n, x, g):
        return (g * n, None)

    f.defvjp(f_fwd, f_bwd)
    """
    assert found(src, "VJP303") == [(
        6, 5, "fwd `f_fwd` takes 2 positional parameters (n, x), but JAX calls it with the 3 positional arguments of "
              "`f` (n, x, eps; nondiff `n` included; the default of `eps` filled in), so differentiating `f` raises "
              "`TypeError: f_fwd() takes 2 positional arguments but 3 were given`; give fwd the parameters "
              "(n, x, eps), in the primal's order")]


def test_fwd_with_defaulted_extras_or_varargs_is_fine():
    src = """
    @jax.custom_vjp
    def f(x, y):
        return x * y

    def f_fwd(x, y, scale=1.0):
        return x * y, (x, y)

    def g_fwd(*args):
        return f(*args), args

    def f_bwd(res, g):
        x, y = res
        return g * y, g * x

    f.defvjp(f_fwd, f_bwd)
    f.defvjp(g_fwd, f_bwd)
    """
    assert structure(src) == []


def test_fwd_too_many_required_parameters():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    f.defvjp(lambda x, y: (x, None), lambda res, g: (g,))
    """
    assert found(src, "VJP303") == [(
        6, 10, "the fwd lambda takes 2 positional parameters (x, y), but JAX calls it with the 1 positional argument "
               "of `f` (x), so differentiating `f` raises `TypeError: <lambda>() missing 1 required positional "
               "argument: 'y'`; give fwd the parameters (x), in the primal's order")]


def test_partial_rules_are_counted_after_binding():
    src = """
    def generic_fwd(fn, x, y):
        return fn(x, y), (x, y)

    def generic_bwd(scale, res, g):
        x, y = res
        return (scale * g * y, scale * g * x)

    @jax.custom_vjp
    def mul(x, y):
        return x * y

    mul.defvjp(partial(generic_fwd, jnp.multiply), functools.partial(generic_bwd, 1.0))

    @jax.custom_vjp
    def neg(x):
        return -x

    neg.defvjp(partial(generic_fwd, jnp.multiply), partial(generic_bwd, 1.0))
    """
    assert where(src, "VJP303") == [(19, 12)]
    (message,) = [m for _, _, m in found(src, "VJP303")]
    assert "takes 2 positional parameters (x, y) after functools.partial binds `fn`" in message
    assert "`TypeError: generic_fwd() missing 1 required positional argument: 'y'`" in message
    assert where(src, "VJP305") == []


def test_partial_keyword_binding_stops_positional_filling():
    src = """
    def _fwd(x, y, scale=1.0):
        return x * y * scale, (x, y)

    @jax.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(partial(_fwd, y=2.0), lambda res, g: (g, g))
    """
    assert where(src, "VJP303") == [(9, 10)]
    assert "takes 1 positional parameter (x) after functools.partial binds `y`" in found(src, "VJP303")[0][2]


def test_partial_assigned_to_a_name_is_followed():
    src = """
    def _bwd(scale, res, g):
        return (scale * g,)

    bwd = partial(_bwd, 2.0)

    @jax.custom_vjp
    def f(x):
        return 2.0 * x

    f.defvjp(lambda x: (f(x), None), bwd)
    """
    assert structure(src) == []


def test_methods_bound_static_and_via_class():
    src = """
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    class Rules:
        def fwd(self, x):
            return jnp.sin(x), x

        def bwd(self, x, g):
            return (g * jnp.cos(x),)

        @staticmethod
        def sfwd(x):
            return jnp.sin(x), x

        def install(self):
            f.defvjp(self.fwd, self.bwd)

    f.defvjp(Rules.sfwd, Rules.bwd)
    """
    # `self.fwd`/`self.bwd` drop self; the staticmethod keeps x; `Rules.bwd` is unbound: 3 parameters.
    assert structure(src) == [("VJP305", 10, 9)]
    assert "takes 3 positional parameters (self, x, g)" in found(src, "VJP305")[0][2]


def test_bound_method_with_wrong_arity_names_self():
    src = """
    @jax.custom_vjp
    def f(x, y):
        return x * y

    class Layer:
        def fwd(self, x):
            return x, None

        def bwd(self, res, g):
            return (g, g)

        def setup(self):
            f.defvjp(self.fwd, self.bwd)
    """
    assert found(src, "VJP303") == [(
        7, 9, "fwd `fwd` takes 1 positional parameter (x) besides `self`, but JAX calls it with the 2 positional "
              "arguments of `f` (x, y), so differentiating `f` raises `TypeError: fwd() takes 2 positional arguments "
              "but 3 were given`; give fwd the parameters (x, y), in the primal's order")]


def test_rules_with_unknown_decorators_or_rebound_names_are_unknown():
    src = """
    def trace(fn):
        return fn

    @jax.custom_vjp
    def f(x, y):
        return x * y

    @trace
    def f_fwd(x):
        return x, None

    if jax.config.jax_enable_x64:
        def f_bwd(g):
            return (g, g)
    else:
        def f_bwd(res, g, h):
            return (g, g)

    f.defvjp(f_fwd, f_bwd)
    """
    assert structure(src) == []


def test_primal_changed_by_an_inner_decorator_is_unknown():
    src = """
    def wrap(fn):
        def inner(*args):
            return fn(*args)
        return inner

    @jax.custom_vjp
    @wrap
    def f(x, y):
        return x * y

    f.defvjp(lambda *args: (f(*args), args), lambda res, g: (g,))
    """
    assert structure(src) == []


def test_primal_varargs_counted_from_agreeing_private_call_sites():
    src = """
    @jax.custom_vjp
    def _sum_all(*xs):
        return sum(xs)

    def _sum_all_fwd(*xs):
        return _sum_all(*xs), None

    def _sum_all_bwd(_, g):
        return (g, g)

    _sum_all.defvjp(_sum_all_fwd, _sum_all_bwd)

    def loss(a, b, c):
        return _sum_all(a, b, c) + _sum_all(c, b, a)
    """
    assert found(src, "VJP306") == [(
        10, 12, "bwd `_sum_all_bwd` returns 2 cotangents but `_sum_all` has 3 differentiable arguments (xs[0], xs[1], "
                f"xs[2]); differentiating `_sum_all` raises {BWD_TREE}; return one cotangent (or None) per "
                "differentiable argument, in order")]


@pytest.mark.parametrize("calls", [
    "_sum_all(a, b) + _sum_all(a, b, c)",  # disagreeing call sites
    "_sum_all(*[a, b, c])",  # hidden arguments
    "jax.grad(_sum_all)(a, b, c)",  # escapes: called from elsewhere
])
def test_primal_varargs_stays_silent_when_calls_do_not_decide(calls):
    src = f"""
    @jax.custom_vjp
    def _sum_all(*xs):
        return sum(xs)

    _sum_all.defvjp(lambda *xs: (_sum_all(*xs), None), lambda _, g: (g, g))

    def loss(a, b, c):
        return {calls}
    """
    assert structure(src) == []


def test_public_varargs_primal_only_checks_the_fixed_parameters():
    src = """
    @jax.custom_vjp
    def weighted(w, *xs):
        return w * sum(xs)

    weighted.defvjp(lambda: (0.0, None), lambda res, g: (g, g, g))
    """
    assert structure(src) == [("VJP303", 6, 17)]
    assert "calls it with at least the 1 positional argument of `weighted` (w)" in found(src, "VJP303")[0][2]


# -- VJP305 bwd-arity ------------------------------------------------------------------------------------
def test_bwd_arity_with_nondiff_argnames_in_sorted_order():
    src = """
    @partial(jax.custom_vjp, nondiff_argnums=(2,), nondiff_argnames=("fn",))
    def f(fn, x, axis):
        return fn(x)

    def f_fwd(fn, x, axis):
        return fn(x), x

    def f_bwd(axis, x, g):
        return (g,)

    f.defvjp(f_fwd, f_bwd)
    """
    assert found(src, "VJP305") == [(
        9, 5, "bwd `f_bwd` takes 3 positional parameters (axis, x, g), but JAX calls it with 4 arguments, "
              "bwd(fn, axis, residuals, cotangent): the nondiff arguments `fn`, `axis` first (sorted by position), "
              "then the residuals, then the output cotangent; differentiating `f` raises `TypeError: f_bwd() takes 3 "
              "positional arguments but 4 were given`")]


def test_bwd_defaulted_helper_parameter_and_varargs_are_fine():
    src = """
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(n, x):
        return x * n

    def f_fwd(n, x):
        return x * n, None

    def f_bwd(n, res, g, eps=1e-6):
        return (g * n + eps,)

    f.defvjp(f_fwd, f_bwd)
    f.defvjp(f_fwd, lambda *args: (args[-1],))
    """
    assert structure(src) == []


def test_bwd_extra_required_parameter_fires():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    def f_bwd(res, g, scale):
        return (scale * g,)

    f.defvjp(lambda x: (x, None), f_bwd)
    """
    assert where(src, "VJP305") == [(6, 5)]
    assert "`TypeError: f_bwd() missing 1 required positional argument: 'scale'`" in found(src, "VJP305")[0][2]


@pytest.mark.parametrize("argnums", ["(-1,)", "0", "1", "(5,)", "(1.0,)", "some_runtime_value()"])
def test_invalid_nondiff_argnums_leave_counting_to_vjp103(argnums):
    src = f"""
    @partial(jax.custom_vjp, nondiff_argnums={argnums})
    def f(x, n):
        return x * n

    f.defvjp(lambda x, n: (x * n, None), lambda n, res, g: g)
    """
    assert structure(src) == []


# -- VJP304 fwd-not-pair ---------------------------------------------------------------------------
def test_fwd_returns_are_judged_one_by_one():
    src = """
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_fwd(x):
        if x.ndim == 0:
            return jnp.sin(x)
        out = (jnp.sin(x), x, jnp.cos(x))
        if x.ndim == 1:
            return out
        return [jnp.sin(x), (x,)]

    f.defvjp(f_fwd, lambda res, g: (g,))
    """
    assert where(src, "VJP304") == [(8, 16), (11, 16)]
    first, second = [m for _, _, m in found(src, "VJP304")]
    assert first.startswith("fwd `f_fwd` returns `jnp.sin(x)` (an array), not a pair (primal_out, residuals)")
    assert second.startswith("fwd `f_fwd` returns a 3-element tuple (`out` is that tuple), not a pair")


def test_fwd_unknown_returns_stay_silent():
    src = """
    def helper(x):
        return x, None

    @jax.custom_vjp
    def f(x):
        return x

    def f_fwd(x):
        if x.ndim:
            return helper(x)
        if x.size:
            return x
        return (*helper(x),)

    f.defvjp(f_fwd, lambda res, g: (g,))
    """
    # helper(x)'s pair is unknown: silent. `return x` is the primal's own output, never a pair
    # whose first element has that output's structure, so JAX rejects it whatever x is: VJP304.
    assert structure(src) == [("VJP304", 13, 16)]
    assert structure(src.replace("            return x\n", "            return helper(x)\n")) == []


def test_fwd_starred_pair_is_too_long_only_when_the_fixed_part_is():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    def f_fwd(x):
        rest = (x, x)
        return (x, *rest)

    f.defvjp(f_fwd, lambda res, g: (g,))
    """
    assert where(src, "VJP304") == [(8, 12)]
    assert "returns a 3-element tuple" in found(src, "VJP304")[0][2]


# -- VJP306 bwd-return-length ----------------------------------------------------------------------
def test_bwd_return_length_names_and_nondiff_slot_fix():
    src = """
    @partial(jax.custom_vjp, nondiff_argnums=(0, 2))
    def f(fn, x, axis, y):
        return fn(x) * y

    def f_fwd(fn, x, axis, y):
        return fn(x) * y, (x, y)

    def f_bwd(fn, axis, res, g):
        x, y = res
        return (None, g * y, None, g * fn(x))

    f.defvjp(f_fwd, f_bwd)
    """
    assert found(src, "VJP306") == [(
        11, 13, "bwd `f_bwd` returns 4 cotangents but `f` has 2 differentiable arguments (x, y): it counted a slot "
                "for the nondiff arguments `fn` (position 0), `axis` (position 2), and bwd returns nothing for "
                f"nondiff arguments; differentiating `f` raises {BWD_TREE}; return one cotangent (or None) per "
                "differentiable argument, in order")]
    assert fix_of(src, "VJP306") == ("safe", "g * y, g * fn(x)")


@pytest.mark.parametrize("ret, fixed", [
    ("(None, g * 2.0)", "g * 2.0,"),
    ("(None, g * 2.0,)", "g * 2.0"),
    ("[None, g * 2.0]", "g * 2.0"),
    ("None, g * 2.0", "g * 2.0,"),
])
def test_nondiff_slot_fix_keeps_a_valid_tuple(ret, fixed):
    src = f"""
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(n, x):
        return 2.0 * x

    def f_bwd(n, res, g):
        return {ret}

    f.defvjp(lambda n, x: (2.0 * x, None), f_bwd)
    """
    assert fix_of(src, "VJP306") == ("safe", fixed)


def test_nondiff_slot_not_none_has_no_fix():
    src = """
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(n, x):
        return n * x

    def f_bwd(n, res, g):
        return (jnp.zeros(()), n * g)

    f.defvjp(lambda n, x: (n * x, None), f_bwd)
    """
    (d,) = lint(HEADER + textwrap.dedent(src), select=["VJP306"])
    assert d.fix is None
    assert "it counted a slot for the nondiff argument `n` (position 0)" in d.message


def test_bwd_return_length_through_names_starred_and_branches():
    src = """
    @jax.custom_vjp
    def f(x, y):
        return x * y

    def f_bwd(res, g):
        x, y = res
        grads = (g * y,)
        if x.ndim:
            return grads
        if y.ndim:
            return (*grads, g * x, None)
        return (g * y, g * x) if x.size else (g * y, g * x, None)

    f.defvjp(lambda x, y: (x * y, (x, y)), f_bwd)
    """
    assert where(src, "VJP306") == [(10, 16), (12, 16), (13, 42)]
    messages = [m for _, _, m in found(src, "VJP306")]
    assert messages[0].startswith("bwd `f_bwd` returns 1 cotangent (`grads` is a 1-element tuple) but `f` has 2 "
                                  "differentiable arguments (x, y)")
    assert messages[1].startswith("bwd `f_bwd` returns 3 cotangents but")


def test_bwd_return_length_silent_cases():
    src = """
    def helper(res, g):
        return g, g

    @jax.custom_vjp
    def f(x, y):
        return x * y

    def f_bwd(res, g):
        if g.ndim:
            return helper(res, g)
        if g.size:
            return [g, g]
        grads = (g,)
        grads = grads + (g,)
        if res:
            return grads
        extra = tuple(res)
        return (g, *extra)

    f.defvjp(lambda x, y: (x * y, None), f_bwd)
    """
    assert structure(src) == []


def test_defaulted_argument_needs_a_cotangent():
    src = """
    @jax.custom_vjp
    def f(x, eps=1e-6):
        return jnp.sqrt(x + eps)

    f.defvjp(lambda x, eps=1e-6: (f(x, eps), x), lambda x, g: (g / x,))
    """
    assert found(src, "VJP306") == [(
        6, 59, "the bwd lambda returns 1 cotangent but `f` has 2 differentiable arguments (x, eps) (`eps` has a "
               "default, but JAX fills it in: it needs a cotangent or None); differentiating `f` raises "
               f"{BWD_TREE}; return one cotangent (or None) per differentiable argument, in order")]


# -- VJP307 bwd-return-not-tuple -------------------------------------------------------------------
def test_bare_array_wrapped_when_one_argument():
    src = """
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: g * jnp.cos(x))
    """
    assert found(src, "VJP307") == [(
        6, 50, "the bwd lambda returns `g * jnp.cos(x)` (an array), not a tuple: JAX needs a tuple or list with one "
               f"cotangent (or None) per differentiable argument of `f` (x), and differentiating `f` raises "
               f"{BWD_TREE}; return `(g * jnp.cos(x),)`")]
    assert fix_of(src, "VJP307") == ("safe", "(g * jnp.cos(x),)")


def test_cotangent_itself_is_an_array_only_when_the_primal_returns_one():
    array_out = """
    @jax.custom_vjp
    def f(x):
        return jnp.round(x)

    def f_bwd(_, g):
        return g

    f.defvjp(lambda x: (f(x), None), f_bwd)
    """
    tuple_out = array_out.replace("return jnp.round(x)", "return jnp.round(x), x")
    unknown_out = array_out.replace("return jnp.round(x)", "return x")
    assert where(array_out, "VJP307") == [(7, 12)]
    assert "returns the bare cotangent `g` (one array, since `f` returns one array)" in found(array_out, "VJP307")[0][2]
    assert fix_of(array_out, "VJP307") == ("safe", "(g,)")
    assert structure(tuple_out) == []
    # an identity primal's output is whatever x is: a warning that says "may" (a 1-tuple x is fine)
    ((row, col, message),) = found(unknown_out, "VJP307")
    assert (row, col) == (7, 12) and " may raise " in message and "unless `f`'s output is itself a 1-tuple" in message
    assert [d for d in lint(HEADER + textwrap.dedent(unknown_out), select=["VJP307"]) if d.severity.value != "warning"] == []


def test_none_and_bare_return():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    @jax.custom_vjp
    def h(x, y):
        return x

    def f_bwd(res, g):
        if res is None:
            return
        return None

    f.defvjp(lambda x: (x, None), f_bwd)
    h.defvjp(lambda x, y: (x, None), lambda res, g: None)
    """
    assert where(src, "VJP307") == [(12, 9), (13, 12), (16, 49)]
    diagnostics = lint(HEADER + textwrap.dedent(src), select=["VJP307"])
    assert diagnostics[0].fix is None  # a bare return has nothing to wrap
    assert diagnostics[1].fix is not None and diagnostics[1].fix.applicability.value == "unsafe"
    assert diagnostics[1].fix.edits[0].content == "(None,)"
    assert diagnostics[2].fix is None
    assert diagnostics[2].message.endswith("for zero gradients return `(None, None)`")


def test_arithmetic_that_can_never_be_a_tuple():
    src = """
    @jax.custom_vjp
    def f(x, y):
        return x

    def f_bwd(res, g):
        if res:
            return 2.0 * g
        if g:
            return g - res
        if res:
            return -g
        if g:
            return 2 * g
        return g + res

    f.defvjp(lambda x, y: (x, None), f_bwd)
    """
    # `2 * g` and `g + res` could repeat or join tuples: unknown.
    assert where(src, "VJP307") == [(8, 16), (10, 16), (12, 16)]
    assert all(m.endswith("return a tuple of cotangents") for _, _, m in found(src, "VJP307"))


def test_tuple_returning_helpers_are_not_arrays():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    def f_bwd(res, g):
        if res:
            return jnp.linalg.qr(g)
        if g:
            return jax.scipy.special.logsumexp(g, return_sign=True)
        return jax.lax.stop_gradient(g)

    f.defvjp(lambda x: (x, None), f_bwd)
    """
    assert structure(src) == []


# -- VJP308 bwd-swapped-params ----------------------------------------------------------------------
@pytest.mark.parametrize("params", ["g, res", "ct, res", "cotangent, residuals", "grads, saved", "dy, ctx"])
def test_swapped_parameter_names(params):
    first, second = params.split(", ")
    src = f"""
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_bwd({params}):
        return ({first} * jnp.cos({second}),)

    f.defvjp(lambda x: (jnp.sin(x), x), f_bwd)
    """
    assert found(src, "VJP308") == [(
        6, 5, f"bwd `f_bwd` names its parameters ({first}, {second}), cotangent first, but JAX calls "
              f"bwd(residuals, cotangent): `{first}` receives the residuals and `{second}` the output cotangent, so "
              f"the gradient of `f` is silently wrong (nothing checks it when the shapes fit); swap them: "
              f"({second}, {first})")]


@pytest.mark.parametrize("params, body", [
    ("res, g", "return (g * jnp.cos(res),)"),
    ("x, g", "return (g * jnp.cos(x),)"),
    ("g, h", "return (g * h,)"),
    ("g, res", "x, = g\n        return (res * jnp.cos(x),)"),
    ("*args", "return (args[1] * jnp.cos(args[0]),)"),
])
def test_parameter_names_left_alone(params, body):
    src = f"""
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_bwd({params}):
        {body}

    f.defvjp(lambda x: (jnp.sin(x), x), f_bwd)
    """
    assert structure(src) == []


def test_swapped_names_after_nondiff_parameters():
    src = """
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(n, x):
        return x ** n

    def f_bwd(n, g, res):
        return (n * res ** (n - 1) * g,)

    f.defvjp(lambda n, x: (x ** n, x), f_bwd)
    """
    assert where(src, "VJP308") == [(6, 5)]
    assert "but JAX calls bwd(n, residuals, cotangent)" in found(src, "VJP308")[0][2]


# -- VJP309 defvjp-swapped --------------------------------------------------------------------------
def test_swapped_by_names_reports_once_and_swaps():
    src = """
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def f_fwd(x):
        return jnp.sin(x), x

    def f_bwd(x, g):
        return (g * jnp.cos(x),)

    f.defvjp(f_bwd,   f_fwd)
    """
    assert structure(src) == [("VJP309", 12, 10)]
    (d,) = lint(HEADER + textwrap.dedent(src), select=["VJP309"])
    assert (d.location.column, d.end_location.column) == (10, 24)
    assert d.fix is not None and d.fix.applicability.value == "unsafe"
    assert d.fix.edits[0].content == "f_fwd,   f_bwd"


def test_swapped_keywords_swap_the_values():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    def backward(res, g):
        return (g,)

    def forward(x):
        return x, None

    f.defvjp(bwd=forward, fwd=backward)
    """
    assert fix_of(src, "VJP309") == ("unsafe", "backward, fwd=forward")


def test_swapped_by_arity_and_not_when_counts_agree():
    three = """
    @jax.custom_vjp
    def f(a, b, c):
        return a * b * c

    f.defvjp(lambda res, g: (g, g, g), lambda a, b, c: (a * b * c, None))
    """
    two = """
    @jax.custom_vjp
    def f(a, b):
        return a * b

    f.defvjp(lambda res, g: (g, g), lambda a, b: (a * b, None))
    """
    assert structure(three) == [("VJP309", 6, 10)]
    assert "(the first takes 2 positional parameters (res, g), as many as bwd receives, and the second 3 positional " \
           "parameters (a, b, c), as many as fwd receives)" in found(three, "VJP309")[0][2]
    assert structure(two) == []  # counts cannot tell them apart, and names say nothing


def test_names_in_the_right_order_override_arity():
    src = """
    @jax.custom_vjp
    def f(a, b, c):
        return a * b * c

    def f_fwd(res, g):
        return g, res

    def f_bwd(a, b, c):
        return (a, b, c)

    f.defvjp(f_fwd, f_bwd)
    """
    assert [c for c, _, _ in structure(src)] == ["VJP303", "VJP305"]


# -- VJP301 missing-defvjp --------------------------------------------------------------------------
def test_missing_defvjp_when_called_and_none_rules():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    @jax.custom_jvp
    def h(x):
        return x

    def loss(x):
        return f(x) + jax.grad(h)(x)

    @jax.custom_vjp
    def k(x):
        return x

    k.defvjp(None, lambda res, g: (g,))
    """
    assert where(src, "VJP301") == [(2, 2), (6, 2), (17, 10)]
    messages = [m for _, _, m in found(src, "VJP301")]
    # Messages quote file lines, which include the 4-line HEADER.
    assert messages[0] == (
        "custom_vjp `f` is called (line 15) but never gets its rules: this file has no `f.defvjp(fwd, bwd)`, so "
        "calling it raises `AttributeError: No VJP defined for custom_vjp function f using defvjp.` in every mode, "
        "eager included; define fwd and bwd and register them with `f.defvjp(f_fwd, f_bwd)`")
    assert messages[1].startswith("custom_jvp `h` is passed to `jax.grad` (line 15) but never gets its rules")
    assert messages[2] == ("`k.defvjp` gets None as its fwd rule, so every call of `k` raises `AttributeError: No "
                           "VJP defined for custom_vjp function k using defvjp.`; pass the fwd function")


@pytest.mark.parametrize("registration", [
    "g = f\ng.defvjp(lambda x: (x, None), lambda r, t: (t,))",  # through another name
    "for fn in (f,):\n    fn.defvjp(lambda x: (x, None), lambda r, t: (t,))",  # in a loop
    "getattr(f, 'defvjp')(lambda x: (x, None), lambda r, t: (t,))",  # by string
    "f.defvjp_with_logs(lambda x: (x, None), lambda r, t: ((t,), None))",  # a variant
    "f.fwd = lambda x: (x, None)\nf.bwd = lambda r, t: (t,)",  # by hand
    "registry['f'].defvjp(lambda x: (x, None), lambda r, t: (t,))",  # an unknown base
    "def reg(fn, how):\n    getattr(fn, how)(lambda x: (x, None), lambda r, t: (t,))",  # a computed method name
    "setattr(f, 'fwd', lambda x: (x, None))\nsetattr(f, 'bwd', lambda r, t: (t,))",  # setattr by hand
])
def test_missing_defvjp_trusts_any_registration_form(registration):
    src = "@jax.custom_vjp\ndef f(x):\n    return x\n\n" + registration + "\n\nf(1.0)\n"
    assert structure(src) == []


def test_calls_inside_would_be_rules_are_not_uses():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    def f_fwd(x):
        return f(x), None

    @jax.custom_jvp
    def h(n, x):
        return h(n - 1, x) if n else x
    """
    assert structure(src) == []


def test_unused_or_jvp_registered_derivatives_are_left_alone():
    src = """
    @jax.custom_vjp
    def exported(x):
        return x

    @jax.custom_jvp
    def h(x):
        return x

    h.defjvps(None)

    @jax.custom_jvp
    def k(x):
        return x

    @partial(k.defjvp, symbolic_zeros=True)
    def k_jvp(primals, tangents):
        return primals[0], tangents[0]

    y = h(1.0) + k(1.0)
    """
    assert structure(src) == []


# -- VJP302 defvjp-as-decorator ---------------------------------------------------------------------
def test_defvjp_decorator_forms():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    def f_fwd(x):
        return x, None

    def f_bwd(res, g):
        return (g,)

    @f.defvjp
    def a(x):
        return x, None

    @f.defvjp(f_fwd, f_bwd)
    def b(x):
        return x

    @partial(f.defvjp, bwd=f_bwd)
    def c(x):
        return x, None
    """
    assert where(src, "VJP302") == [(12, 2), (16, 2)]
    first, second = [m for _, _, m in found(src, "VJP302")]
    assert first == (
        "`@f.defvjp` used as a decorator on `a`: defvjp takes fwd and bwd in one call, so this raises `TypeError: "
        "custom_vjp.defvjp() missing 1 required positional argument: 'bwd'` as soon as `a` is defined (at import "
        "for module-level code); define `a` as a plain function and call `f.defvjp(fwd, bwd)` (only custom_jvp's "
        "`defjvp` works as a decorator)")
    assert "raises `TypeError: 'NoneType' object is not callable`" in second


def test_defvjp_decorator_on_configured_wrapper_is_left_alone():
    src = """
    import mylib

    @mylib.custom_vjp
    def f(x):
        return x

    @f.defvjp
    def f_fwd(x):
        return x, None
    """
    diagnostics = lint(HEADER + textwrap.dedent(src), select=["VJP302"],
                       custom_vjp_aliases=(("mylib.custom_vjp", "nondiff_argnums"),))
    assert diagnostics == []


# -- placeholders and shared rules ------------------------------------------------------------------
def test_placeholder_rules_are_never_checked():
    src = """
    @jax.custom_vjp
    def f(pred, x):
        return x

    def f_fwd(pred, x):
        assert False

    def f_bwd(aux, pred, x):
        raise NotImplementedError

    f.defvjp(f_fwd, f_bwd)

    @jax.custom_vjp
    def h(ref):
        return ref

    h.defvjp(lambda ref: ..., lambda *_: ...)
    """
    assert structure(src) == []


def test_a_shared_bwd_is_reported_once_per_return():
    src = """
    def shared_bwd(res, g):
        return g * 2.0

    @jax.custom_vjp
    def f(x):
        return x

    @jax.custom_vjp
    def h(x):
        return x

    f.defvjp(lambda x: (x, None), shared_bwd)
    h.defvjp(lambda x: (x, None), shared_bwd)
    """
    assert structure(src) == [("VJP307", 3, 12)]


def test_a_bwd_shared_by_functions_of_different_arity_is_checked_for_each():
    src = """
    def shared_bwd(res, g):
        return (g, g)

    @jax.custom_vjp
    def two(x, y):
        return x + y

    @jax.custom_vjp
    def one(x):
        return x

    two.defvjp(lambda x, y: (x + y, None), shared_bwd)
    one.defvjp(lambda x: (x, None), shared_bwd)
    """
    assert found(src, "VJP306") == [(
        3, 12, "bwd `shared_bwd` returns 2 cotangents but `one` has 1 differentiable argument (x); differentiating "
               f"`one` raises {BWD_TREE}; return one cotangent (or None) per differentiable argument, in order")]


def test_rev_naming_counts_as_bwd():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    def f_fwd(x):
        return x, None

    def f_rev(_, g):
        return (g,)

    f.defvjp(f_rev, f_fwd)
    f.defvjp(f_fwd, f_rev)
    """
    assert where(src, "VJP309") == [(12, 10)]


def test_required_keyword_only_parameters_are_never_passed():
    src = """
    @jax.custom_vjp
    def f(x):
        return x

    def f_fwd(x, *, training):
        return x, None

    def f_bwd(res, g, *, scale, eps=1e-6):
        return (scale * g,)

    f.defvjp(f_fwd, f_bwd)
    f.defvjp(partial(f_fwd, training=True), partial(f_bwd, scale=2.0))
    """
    assert found(src, "VJP303") == [(
        6, 5, "fwd `f_fwd` has the required keyword-only parameter `training`, but JAX passes only the 1 positional "
              "argument of `f` (x), so differentiating `f` raises `TypeError: f_fwd() missing 1 required keyword-only "
              "argument: 'training'`; give `training` a default or remove it")]
    assert found(src, "VJP305") == [(
        9, 5, "bwd `f_bwd` has the required keyword-only parameter `scale`, but JAX calls it with 2 positional "
              "arguments only, bwd(residuals, cotangent): the residuals, then the output cotangent (`f` has no "
              "nondiff arguments); differentiating `f` raises `TypeError: f_bwd() missing 1 required keyword-only "
              "argument: 'scale'`")]


# -- fixes, proven on JAX ---------------------------------------------------------------------------
FIXED_FIXTURES = [
    ("VJP306", "fire_slot_for_nondiff.py"),
    ("VJP307", "fire_bare_array.py"),
    ("VJP307", "fire_straight_through_identity.py"),
    ("VJP309", "fire_named_swapped.py"),
    ("VJP309", "fire_keywords_swapped.py"),
    ("VJP309", "fire_arity_shows_swap.py"),
]


def _apply(source: str, edit) -> str:
    lines = source.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:edit.location.row - 1]) + edit.location.column - 1
    end = sum(len(line) for line in lines[:edit.end_location.row - 1]) + edit.end_location.column - 1
    return source[:start] + edit.content + source[end:]


@pytest.mark.jax
@pytest.mark.parametrize("code, name", FIXED_FIXTURES, ids=lambda v: v)
def test_fix_turns_the_failing_fixture_into_working_code(code, name, jax_cpu, tmp_path):
    import importlib.util

    from tests.conftest import RULE_FIXTURES

    source = (RULE_FIXTURES / code / name).read_text(encoding="utf-8")
    (d,) = lint(source, select=[code], filename=name)
    assert d.fix is not None
    fixed = _apply(source, d.fix.edits[0])
    assert lint(fixed, select=list(CODES), filename=name) == []
    path = tmp_path / name
    path.write_text(fixed, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"fixed_{code}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.trigger()  # used to raise JAX's error; must run now
