"""The residual-plus-None transform on small sources: every syntactic form, exact output,
fix safety and the reasons for refusing. (Whole realistic pairs live in fixtures/fix.)"""

from __future__ import annotations

import ast
import textwrap
from typing import List, Optional, Tuple

import pytest

from vjplint.settings.config import Config
from vjplint.diagnostics import Applicability
from vjplint.fixes.apply import fix_text

HEADER = "from functools import partial\nimport jax\nimport jax.numpy as jnp\n"


def fixed(source: str, unsafe: bool = True, **config) -> str:
    result = fix_text("t.py", textwrap.dedent(source), Config(**config), unsafe)
    assert result.errors == []
    ast.parse(result.text)
    again = fix_text("t.py", result.text, Config(**config), unsafe)
    assert again.text == result.text, "a second --fix must change nothing"
    return result.text


def offers(source: str, **config) -> List[Tuple[str, Optional[Applicability], str]]:
    """(code, applicability, no-fix reason) for each VJP101/VJP102 diagnostic."""
    from vjplint.lint.engine import lint_source

    out = []
    for d in lint_source("t.py", textwrap.dedent(source), Config(**config)).diagnostics:
        if d.code in ("VJP101", "VJP102"):
            reason = d.message.split("(no automatic fix: ", 1)[1][:-1] if "(no automatic fix: " in d.message else ""
            out.append((d.code, d.fix.applicability if d.fix else None, reason))
    return out


def test_one_line_rules_and_positional_only_bwd():
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def f(lo: jax.Array, hi: jax.Array, x):
            return x

        def f_fwd(lo, hi, x): return x, None
        def f_bwd(lo, hi, _, g, /): return (jnp.clip(g, lo, hi),)

        f.defvjp(f_fwd, f_bwd)
        """)
    assert fixed(source) == "import jax\nimport jax.numpy as jnp\n" + textwrap.dedent("""
        @jax.custom_vjp
        def f(lo: jax.Array, hi: jax.Array, x):
            return x

        def f_fwd(lo, hi, x): return x, (lo, hi)
        def f_bwd(res, g, /):
            lo, hi = res
            return (None, None, jnp.clip(g, lo, hi))

        f.defvjp(f_fwd, f_bwd)
        """)
    assert offers(source) == [("VJP101", Applicability.SAFE, "")] * 2


def test_argnums_constant_range_and_argnames_string_and_import_alias():
    source = textwrap.dedent("""
        from functools import partial as p
        import jax

        ND = (0,)

        @p(jax.custom_vjp, nondiff_argnums=ND)
        def f(w: jax.Array, x):
            return w * x

        def f_fwd(w, x):
            return f(w, x), None

        def f_bwd(w, _, g):
            return (w * g,)

        f.defvjp(f_fwd, f_bwd)

        @p(jax.custom_vjp, nondiff_argnums=range(0, 1), nondiff_argnames="hi")
        def h(lo: jax.Array, hi: jax.Array, x):
            return x

        def h_fwd(lo, hi, x):
            return x, None

        def h_bwd(lo, hi, _, g):
            return (g * lo * hi,)

        h.defvjp(h_fwd, h_bwd)
        """)
    out = fixed(source)
    assert "from functools import" not in out  # every use of `p` is gone, so is its import
    assert "@jax.custom_vjp\ndef f(" in out and "@jax.custom_vjp\ndef h(" in out
    assert "ND = (0,)" in out  # the user's constant stays
    assert "def h_bwd(res, g):\n    lo, hi = res\n    return (None, None, g * lo * hi)" in out


def test_partially_moved_argnums_keep_the_rest_and_the_import():
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0, 2, 3))
        def f(fn, w: jax.Array, axis, b: jax.Array, x):
            return fn(x) * w

        def f_fwd(fn, w, axis, b, x):
            return f(fn, w, axis, b, x), x

        def f_bwd(fn, axis, b, x, g):
            return (g * x.sum(axis), g * b)

        f.defvjp(f_fwd, f_bwd)
        """)
    out = fixed(source)
    assert out.startswith(HEADER)
    assert "@partial(jax.custom_vjp, nondiff_argnums=(0, 2))" in out
    assert "def f_fwd(fn, w, axis, b, x):\n    return f(fn, w, axis, b, x), (x, b)" in out
    assert "def f_bwd(fn, axis, res, g):\n    x, b = res\n    return (g * x.sum(axis), None, g * b)" in out


@pytest.mark.parametrize("before, after", [
    ("(0, 2)", "(0,)"), ("[0, 2]", "[0]"), ("(2, 0)", "(0,)"), ("(0, 1, 2)", "(0, 1)"),
    ("(\n    0,\n    2,\n)", "(\n    0,\n)"),
])
def test_argnums_literal_keeps_its_shape(before, after):
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=ARGNUMS)
        def f(n, k, w: jax.Array, x):
            return x * w * n * k

        def f_fwd(n, k, w, x):
            return f(n, k, w, x), None

        def f_bwd(NONDIFF, _, g):
            return RETURN

        f.defvjp(f_fwd, f_bwd)
        """)
    with_k = "1" in before
    source = (source.replace("ARGNUMS", before).replace("NONDIFF", "n, k, w" if with_k else "n, w")
              .replace("RETURN", "(g * w * n,)" if with_k else "(None, g * w * n)"))
    assert f"nondiff_argnums={after})" in fixed(source)


def test_argnames_tuple_and_argnums_together():
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0,), nondiff_argnames=("w", "n"))
        def f(fn, w: jax.Array, n, x):
            return fn(x) * w

        def f_fwd(fn, w, n, x):
            return f(fn, w, n, x), None

        def f_bwd(fn, w, n, _, g):
            return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """)
    out = fixed(source)
    assert '@partial(jax.custom_vjp, nondiff_argnums=(0,), nondiff_argnames=("n",))' in out
    assert "def f_bwd(fn, n, w, g):\n    return (None, g * w)" in out


def test_nested_function_returns_and_global_names_are_respected():
    source = HEADER + textwrap.dedent("""
        res = 3.0

        @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def f(lo: jax.Array, hi: jax.Array, x):
            return x

        def f_fwd(lo, hi, x):
            return [x, x * res]

        def f_bwd(lo, hi, residuals, g):
            def inner(a):
                return a * res
            return [inner(g) * residuals * lo * hi]

        f.defvjp(f_fwd, f_bwd)
        """)
    out = fixed(source)
    assert "return [x, (x * res, lo, hi)]" in out
    assert ("def f_bwd(res_, g):\n    residuals, lo, hi = res_\n    def inner(a):\n        return a * res\n"
            "    return [None, None, inner(g) * residuals * lo * hi]") in out


def test_bound_returns_in_lambdas_use_walrus_and_indexing():
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def k(w: jax.Array, x):
            return w * x

        k.defvjp(lambda w, x: helper(w, x), lambda w, r, g: grads_of(w, r, g))
        """)
    assert offers(source) == [("VJP101", Applicability.UNSAFE, "")]
    assert fixed(source, unsafe=False) == textwrap.dedent(source)
    out = fixed(source)
    assert ("k.defvjp(lambda w, x: ((fwd_out := helper(w, x))[0], (fwd_out[1], w)), "
            "lambda res, g: (None, (cts := grads_of(res[1], res[0], g))[0]))") in out


def test_bound_return_in_a_one_line_suite_and_a_returned_name():
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def k(w: jax.Array, x, y):
            return w * x * y

        def k_fwd(w, x, y):
            if x.ndim: return impl(w, x, y)
            pair = (w * x * y, (x, y))
            return pair

        def k_bwd(w, res, g):
            x, y = res
            cts = (g * w * y, g * w * x)
            return cts

        k.defvjp(k_fwd, k_bwd)
        """)
    out = fixed(source)
    assert "    if x.ndim: fwd_out = impl(w, x, y); return fwd_out[0], (fwd_out[1], w)\n" in out
    assert "    return pair[0], (pair[1], w)\n" in out
    assert "def k_bwd(residuals, g):\n    res, w = residuals\n" in out
    assert "    return (None, cts[0], cts[1])  # noqa: VJP602\n" in out


def test_starred_return_is_edited_in_place_when_the_slot_comes_first():
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def f(w: jax.Array, a, b):
            return w * a + b

        def f_fwd(w, a, b):
            return f(w, a, b), None

        def f_bwd(w, _, g):
            rest = (g,)
            return (g * w, *rest)

        f.defvjp(f_fwd, f_bwd)
        """)
    assert offers(source) == [("VJP101", Applicability.UNSAFE, "")]  # `f`'s output depends on `w`
    assert "    return (None, g * w, *rest)\n" in fixed(source)  # VJP602 reads no starred return: no mark


def test_multiline_returns_keep_comments_and_trailing_commas():
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(a, w: jax.Array, b):
            return w * a + b

        def f_fwd(a, w, b):
            return f(a, w, b), None

        def f_bwd(w, _, g):
            \"\"\"Cotangents.\"\"\"
            # a first
            return (
                g * w,  # d/da
                g,  # d/db
            )

        f.defvjp(f_fwd, f_bwd)
        """)
    out = fixed(source)
    assert ("def f_bwd(w, g):\n    \"\"\"Cotangents.\"\"\"\n    # a first\n    return (\n        g * w,  # d/da\n"
            "        None,  # noqa: VJP602\n        g,  # d/db\n    )\n") in out


def test_removed_keyword_comment_moves_above_the_assignment():
    source = HEADER + textwrap.dedent("""
        def _f(w, x):
            return w * x

        f = jax.custom_vjp(
            _f,
            nondiff_argnums=(0,),  # frozen weights
        )

        def f_fwd(w: jax.Array, x):
            return _f(w, x), None

        def f_bwd(w, _, g):
            return (jnp.multiply(g, w),)

        f.defvjp(f_fwd, f_bwd)
        """)
    out = fixed(source)
    assert "# frozen weights\nf = jax.custom_vjp(\n    _f,\n)\n" in out
    assert out.startswith(HEADER)  # `partial` was never used here; not ours to remove


def test_alias_wrapper_is_unsafe_and_keeps_its_call():
    source = textwrap.dedent("""
        import mylib

        @mylib.custom_vjp(nondiff=(0,))
        def f(w: jax.Array, x):
            return w * x

        def f_fwd(w, x):
            return f(w, x), None

        def f_bwd(w, _, g):
            return (
                g * w,
            )

        f.defvjp(f_fwd, f_bwd)
        """)
    aliases = (("mylib.custom_vjp", "nondiff"),)
    assert offers(source, custom_vjp_aliases=aliases) == [("VJP101", Applicability.UNSAFE, "")]
    out = fixed(source, custom_vjp_aliases=aliases)
    assert "@mylib.custom_vjp()\ndef f(" in out
    assert "def f_bwd(w, g):\n    return (\n        None,  # noqa: VJP602\n        g * w,\n    )\n" in out


def test_functools_module_import_is_removed_only_when_unused():
    body = textwrap.dedent("""
        @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
        def f(w: jax.Array, x):
            return w * x

        def f_fwd(w, x):
            return f(w, x), None

        def f_bwd(w, _, g):
            return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """)
    assert fixed("import functools\nimport jax\n" + body).startswith("import jax\n\n@jax.custom_vjp\n")
    kept = fixed("import functools\nimport jax\n" + body + "CACHE = functools.lru_cache\n")
    assert kept.startswith("import functools\nimport jax\n\n@jax.custom_vjp\n")


def test_two_derivatives_are_fixed_in_one_pass():
    one = textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def NAME(w: jax.Array, x):
            return w * x

        def NAME_fwd(w, x):
            return NAME(w, x), None

        def NAME_bwd(w, _, g):
            return (g * w,)

        NAME.defvjp(NAME_fwd, NAME_bwd)
        """)
    source = HEADER + one.replace("NAME", "f") + one.replace("NAME", "h")
    result = fix_text("t.py", source, Config(), True)
    assert result.fixed_count == 2 and "partial" not in result.text
    assert result.text.count("@jax.custom_vjp\n") == 2


def test_crlf_line_endings_are_kept():
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def f(w: jax.Array, x):
            return w * x

        def f_fwd(w, x):
            return f(w, x), None

        def f_bwd(w, res, g):
            return (g * w,)

        f.defvjp(f_fwd, f_bwd)
        """)
    out = fixed(source.replace("\n", "\r\n"))
    assert "\n" not in out.replace("\r\n", "") and out.count("\r\n") == out.count("\n")
    assert "def f_bwd(w, g):\r\n    return (None, g * w)  # noqa: VJP602\r\n" in out


RULES_USED_ELSEWHERE = """
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(w: jax.Array, x):
    return w * x

def f_fwd(w, x):
    return f(w, x), None

def f_bwd(w, _, g):
    return (g * w,)

f.defvjp(f_fwd, f_bwd)
"""
FWD_CHANGES = "fwd `f_fwd` is also called or referenced outside `defvjp` in this file, and the rewrite changes what it returns"
BWD_CHANGES = "bwd `f_bwd` is also called or referenced outside `defvjp` in this file, and the rewrite changes its parameters"


@pytest.mark.parametrize("tail, reason", [
    ("def test_bwd():\n    assert f_bwd(1.0, None, 2.0) == (2.0,)\n", BWD_CHANGES),
    ("def forward(w, x):\n    out, _ = f_fwd(w, x)\n    return out\n", FWD_CHANGES),
    ("def forward(w, x):\n    return partial(f_fwd, w)(x)[1]\n", FWD_CHANGES),
    ("RULES = {'fwd': f_fwd}\n", FWD_CHANGES),
    ("class Holder:\n    fwd = staticmethod(f_fwd)\n", FWD_CHANGES),
])
def test_rules_used_outside_defvjp_refuse_the_fix(tail, reason):
    """Issue 15: a direct caller of a rewritten rule would silently get the new return/parameters."""
    source = HEADER + RULES_USED_ELSEWHERE + "\n" + tail
    assert offers(source) == [("VJP101", None, reason)]
    assert fixed(source) == textwrap.dedent(source)


JIT_STATIC = "`w` is marked static in {where}, so callers pass a Python value there, which a differentiable position rejects"


@pytest.mark.parametrize("source, where", [
    (RULES_USED_ELSEWHERE + "f_jit = jax.jit(f, static_argnames=('w',))\n", "`jax.jit(...)` at line 16"),
    (RULES_USED_ELSEWHERE + "f_jit = jax.jit(f, static_argnums=0)\n", "`jax.jit(...)` at line 16"),
    (RULES_USED_ELSEWHERE + "f_jit = jax.jit(f, static_argnums=(-2,))\n", "`jax.jit(...)` at line 16"),
    (RULES_USED_ELSEWHERE.replace("@partial(jax.custom_vjp", "@partial(jax.jit, static_argnames='w')\n@partial(jax.custom_vjp"),
     "the `jax.jit` decorating it"),
    (RULES_USED_ELSEWHERE + "f_jit = partial(jax.jit, static_argnums=(0,))(f)\n", "`partial(jax.jit, ...)(...)` at line 16"),
    (RULES_USED_ELSEWHERE + "@partial(jax.jit, static_argnames=('scale',))\ndef apply(x, scale):\n    return f(scale, x)\n",
     "the `jax.jit` of `apply`, which passes its static `scale` here (line 18)"),
    (RULES_USED_ELSEWHERE + "@partial(jax.jit, static_argnums=1)\ndef apply(x, scale):\n    return f(w=scale, x=x)\n",
     "the `jax.jit` of `apply`, which passes its static `scale` here (line 18)"),
])
def test_jit_static_parameter_is_not_moved(source, where):
    """Issue 15: a jit-static parameter receives Python values (strings too), never arrays."""
    assert [o[1:] for o in offers(HEADER + source)] == [(None, JIT_STATIC.format(where=where))]


def test_jitted_caller_passing_a_traced_argument_keeps_the_fix():
    source = HEADER + RULES_USED_ELSEWHERE + \
        "@partial(jax.jit, static_argnames=('n',))\ndef apply(x, scale, n):\n    return f(scale, x) * n\n"
    assert offers(source) == [("VJP101", Applicability.UNSAFE, "")]  # `f`'s output depends on `w`


def test_jit_without_static_for_the_moved_parameter_keeps_the_fix():
    source = HEADER + RULES_USED_ELSEWHERE.replace("(w: jax.Array, x)", "(w: jax.Array, x, mode='a')") \
        .replace("def f_fwd(w, x):\n    return f(w, x), None", "def f_fwd(w, x, mode='a'):\n    return f(w, x, mode), None") \
        .replace("(g * w,)", "(g * w, None)") + "f_jit = jax.jit(f, static_argnames=('mode',))\n"
    assert offers(source) == [("VJP101", Applicability.UNSAFE, "")]


RULES = """
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(w: jax.Array, x, y=1.0):
    return w * x * y

def f_fwd(w, x, y=1.0):
    return f(w, x, y), None

def f_bwd(w, _, g):
    return (g * w, None)

f.defvjp(f_fwd, f_bwd)
"""


@pytest.mark.parametrize("old, new, reason", [
    ("def f_fwd(w, x, y=1.0):", "def f_fwd(*args):", "fwd takes *args, so the moved arguments have no names there"),
    ("def f_bwd(w, _, g):", "def f_bwd(*args):", "bwd takes *args"),
    ("    return (g * w, None)", "    return g * w", "a bwd `return` is a bare value, not a tuple (see VJP307)"),
    ("    return (g * w, None)", "    return (g * w,)",
     "a bwd `return` has 1 entries where 2 are expected (see VJP306)"),
    ("    return (g * w, None)", "    return None", "a bwd `return` returns None, not a tuple (see VJP307)"),
    ("    return (g * w, None)", "    yield (g * w, None)", "bwd is a generator"),
    ("f.defvjp(f_fwd, f_bwd)", "f.defvjp(f_fwd, partial(f_bwd, w=2.0))", "bwd is a functools.partial"),
    ("f.defvjp(f_fwd, f_bwd)", "f.defvjp(f_fwd, f_bwd)\nf.defvjp(f_fwd, f_bwd)",
     "there is not exactly one `defvjp(fwd, bwd)` registration in this file"),
    ("f.defvjp(f_fwd, f_bwd)", "f.defvjp(f_fwd, f_bwd, symbolic_zeros=FLAG)",
     "symbolic_zeros=True wraps differentiable fwd arguments in CustomVJPPrimal records"),
    ("    return f(w, x, y), None", "    return f(w, x, y), None, None",
     "a fwd `return` has 3 entries, not a pair (see VJP304)"),
    ("def f_bwd(w, _, g):", "if FLAG:\n    def f_bwd(w, _, g):\n        return (g, None)\ndef f_bwd(w, _, g):",
     "bwd `f_bwd` is bound more than once, so it is unclear which one to rewrite"),
    ("f.defvjp(f_fwd, f_bwd)", "f.defvjp(f_fwd, other.bwd)", "bwd `other.bwd` is not defined in this file"),
    ("f.defvjp(f_fwd, f_bwd)", "from rules import bwd\nf.defvjp(f_fwd, bwd)",
     "bwd `bwd` comes from `rules`, another file"),
    ("f.defvjp(f_fwd, f_bwd)", "import rules\nf.defvjp(f_fwd, rules.bwd)", "bwd `rules.bwd` comes from `rules`, another file"),
])
def test_refusals_say_why(old, new, reason):
    source = HEADER + RULES.replace(old, new)
    assert offers(source) == [("VJP101", None, reason)]
    assert fixed(source) == source


def test_primal_with_varargs_is_refused():
    source = HEADER + RULES.replace("def f(w: jax.Array, x, y=1.0):", "def f(w: jax.Array, x, *ys):")
    assert offers(source) == [("VJP101", None, "`f` takes *ys, so output positions depend on each call")]


def test_shared_rules_are_refused_for_both():
    source = HEADER + RULES + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def h(w: jax.Array, x, y=1.0):
            return w * x * y

        h.defvjp(f_fwd, f_bwd)
        """)
    assert offers(source) == [("VJP101", None, "fwd/bwd are shared with `h`, which would break"),
                              ("VJP101", None, "fwd/bwd are shared with `f`, which would break")]


def test_appended_slots_leave_end_of_line_comments_in_place_and_calls_keep_their_closing_line():
    source = HEADER + textwrap.dedent("""
        def _f(a, b, w):
            return w * a + b

        f = jax.custom_vjp(
            _f, nondiff_argnums=(2,)
        )

        def f_fwd(a, b, w: jax.Array):
            return _f(a, b, w), None

        def f_bwd(w, _, g):
            return (
                g * w,  # d/da
                g,  # d/db
            )

        f.defvjp(f_fwd, f_bwd)
        """)
    out = fixed(source)
    assert "f = jax.custom_vjp(\n    _f\n)\n" in out
    assert "    return (\n        g * w,  # d/da\n        g,  # d/db\n        None,  # noqa: VJP602\n    )\n" in out


def test_fwd_that_rebinds_a_moved_argument_saves_a_copy_taken_first():
    source = HEADER + RULES.replace("    return f(w, x, y), None", "    w, w_in = w + 1, 0\n    return f(w, x, y), None")
    assert offers(source) == [("VJP101", Applicability.UNSAFE, "")]
    out = fixed(source)
    assert ("def f_fwd(w, x, y=1.0):\n    w_arg = w\n    w, w_in = w + 1, 0\n    return f(w, x, y), w_arg\n"
            in out)
    lam = HEADER + RULES.replace("f.defvjp(f_fwd, f_bwd)", "f.defvjp(lambda w, x, y=1.0: ((w := 2 * w), None), f_bwd)")
    assert offers(lam) == [("VJP101", None, "the fwd lambda rebinds `w`, so its original value is not at hand to save")]


def test_rows_and_columns_survive_form_feeds_and_non_ascii_text():
    source = HEADER + "\x0c\n" + RULES.replace(
        "def f_bwd(w, _, g):\n    return (g * w, None)",
        'def f_bwd(w, _, g): s = "é\u2028"; return (g * w, None)')
    out = fixed(source)
    assert 'def f_bwd(w, g): s = "é\u2028"; return (None, g * w, None)  # noqa: VJP602\n' in out


def test_a_comment_saying_fwd_saves_nothing_goes_with_the_none():
    """Issue 37: `return x, (lo, hi)  # no residual values to save` was left false; other comments stay."""
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def clip_gradient(lo, hi, x):
            return x

        def clip_gradient_fwd(lo, hi, x):
            return x, None  # no residual values to save

        def clip_gradient_bwd(lo, hi, _, g):
            return (jnp.clip(g, lo, hi),)  # clip the cotangent

        clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
        """)
    assert offers(source) == [("VJP101", Applicability.SAFE, ""), ("VJP101", Applicability.SAFE, "")]
    out = fixed(source, unsafe=False)
    assert "def clip_gradient_fwd(lo, hi, x):\n    return x, (lo, hi)\n" in out
    assert "    return (None, None, jnp.clip(g, lo, hi))  # clip the cotangent\n" in out


def test_a_comment_on_the_bwd_return_the_rewrite_makes_false_goes():
    """Issue 37: comments on rewritten bwd `return` lines are kept true: the old tuple's length
    (`# a 1-tuple`), a moved argument called nondiff, "nothing to differentiate" on a `return ()`
    go (a `# noqa: VJP602` the rewrite adds stays); a comment still true stays."""
    source = HEADER + textwrap.dedent("""
        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def scaled(scale, x):
            return x * jnp.exp(scale)

        def scaled_fwd(scale, x):
            return x * jnp.exp(scale), None

        def scaled_bwd(scale, _, g):
            return (g * jnp.exp(scale),)  # a 1-tuple: scale is nondiff

        scaled.defvjp(scaled_fwd, scaled_bwd)

        @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def app(f, x):
            return f(x)

        def app_fwd(f, x):
            return app(f, x), x

        def app_bwd(f, x_nd, x, g):
            return ()  # nothing to differentiate

        app.defvjp(app_fwd, app_bwd)

        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def clip(lo, x):
            return x

        def clip_fwd(lo, x):
            return x, None

        def clip_bwd(lo, _, g):
            return (jnp.clip(g, lo),)  # clip the cotangent at lo, a static bound of the caller

        clip.defvjp(clip_fwd, clip_bwd)
        """)
    out = fixed(source)
    assert "def scaled_bwd(scale, g):\n    return (None, g * jnp.exp(scale))  # noqa: VJP602\n" in out
    assert "def app_bwd(f, res, g):\n    x, x_nd = res\n    return (None,)  # noqa: VJP602\n" in out
    # `lo` is named and called static: the rewrite makes it a differentiable argument
    assert "def clip_bwd(lo, g):\n    return (None, jnp.clip(g, lo))\n" in out
    kept = source.replace("at lo, a static bound of the caller", "from below")
    assert "    return (None, jnp.clip(g, lo))  # clip the cotangent from below\n" in fixed(kept)
