"""Recognition (SPEC section 4): every spelling becomes one entry of the shared model."""

from __future__ import annotations

import ast
import textwrap

import pytest

from vjplint.facts.collect import Recognizer, collect
from vjplint.syntax.source import parse


def model_of(source: str, recognizer: Recognizer = None):
    text = textwrap.dedent(source)
    return collect(parse(text), text.splitlines(), recognizer)


def only(source: str):
    model = model_of(source)
    assert len(model.derivatives) == 1, [d.name for d in model.derivatives]
    return model.derivatives[0]


@pytest.mark.parametrize("source,kind,nondiff", [
    ("import jax\n@jax.custom_vjp\ndef f(x): return x\n", "vjp", ()),
    ("from jax import custom_vjp as cv\n@cv\ndef f(x): return x\n", "vjp", ()),
    ("import jax as jx\nfrom functools import partial\n@partial(jx.custom_vjp, nondiff_argnums=(0,))\n"
     "def f(n, x): return x\n", "vjp", (0,)),
    ("import functools, jax\n@functools.partial(jax.custom_jvp, nondiff_argnums=[1])\ndef f(x, n): return x\n",
     "jvp", (1,)),
    ("import jax\ndef g(a, b, x): return x\nf = jax.custom_vjp(g, nondiff_argnums=(0, 1))\n", "vjp", (0, 1)),
    ("from jax.custom_derivatives import custom_vjp\n@custom_vjp\ndef f(x): return x\n", "vjp", ()),
    ("import jax.custom_derivatives\n@jax.custom_derivatives.custom_jvp\ndef f(x): return x\n", "jvp", ()),
    ("import jax\nfrom functools import partial\n@partial(jax.custom_vjp, nondiff_argnames=('n',))\n"
     "def f(x, n): return x\n", "vjp", (1,)),
    ("import jax\nfrom functools import partial\nND = (0, 2)\n@partial(jax.custom_vjp, nondiff_argnums=ND)\n"
     "def f(a, x, b): return x\n", "vjp", (0, 2)),
    ("import jax\nfrom functools import partial\n@partial(jax.custom_vjp, nondiff_argnums=range(0, 2))\n"
     "def f(a, b, x): return x\n", "vjp", (0, 1)),
    ("import jax\nfrom functools import partial\n@partial(\n    jax.custom_vjp,\n    nondiff_argnums=(\n"
     "        0,\n    ),\n)\ndef f(a, x): return x\n", "vjp", (0,)),
    ("import jax\nfrom functools import partial\n@partial(jax.custom_vjp, nondiff_argnums=(0, 0))\n"
     "def f(a, x): return x\n", "vjp", (0,)),
])
def test_spellings(source, kind, nondiff):
    d = only(source)
    assert (d.kind, d.nondiff) == (kind, nondiff)
    assert d.name == "f"


def test_local_function_named_custom_vjp_is_not_jax():
    model = model_of("""
        import jax
        def custom_vjp(f):
            return f
        @custom_vjp
        def f(x):
            return x
    """)
    assert model.derivatives == []


def test_shadowing_in_a_function_scope():
    model = model_of("""
        from jax import custom_vjp
        def build():
            custom_vjp = lambda f: f
            @custom_vjp
            def f(x):
                return x
            return f
    """)
    assert model.derivatives == []


def test_registrations_rules_and_call_sites():
    d = only("""
        import jax
        from functools import partial

        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def f(fn, x):
            return fn(x)

        def bwd(fn, res, g, scale=1.0):
            return (g * scale,)

        f.defvjp(fwd=lambda fn, x: (fn(x), x), bwd=partial(bwd, scale=2.0))

        def fwd_defined_later(fn, x):
            return fn(x), x

        y = f(abs, 1.0)
    """)
    fwd, bwd = d.rule("fwd"), d.rule("bwd")
    assert isinstance(fwd.node, ast.Lambda)
    assert bwd.name == "bwd" and bwd.bound_keywords == ("scale",)
    assert bwd.effective_positional() == ["fn", "res", "g"]
    assert [c.call.lineno for c in d.call_sites] == [17]


def test_rules_defined_after_registration_and_decorator_defjvp():
    model = model_of("""
        import jax

        @jax.custom_jvp
        def f(x):
            return x

        @f.defjvp
        def f_jvp(primals, tangents):
            return primals[0], tangents[0]

        @jax.custom_vjp
        def g(x):
            return x

        g.defvjp(g_fwd, g_bwd)

        def g_fwd(x):
            return x, None

        def g_bwd(_, ct):
            return (ct,)
    """)
    f, g = model.derivatives
    assert f.registration.as_decorator and f.rule("jvp").name == "f_jvp"
    assert g.rule("fwd").name == "g_fwd" and g.rule("bwd").node is not None


def test_methods_and_class_registration():
    model = model_of("""
        import jax

        class Layer:
            @staticmethod
            @jax.custom_vjp
            def act(x):
                return x

            def _fwd(x):
                return x, None

            def _bwd(_, g):
                return (g,)

            act.defvjp(_fwd, _bwd)
    """)
    (d,) = model.derivatives
    assert d.class_node is not None and d.class_node.name == "Layer"
    assert d.rule("fwd").name == "_fwd"


def test_traced_functions_and_static_params():
    model = model_of("""
        import jax
        from functools import partial

        @partial(jax.jit, static_argnums=(0,), static_argnames=("mode",))
        def step(n, x, mode="a"):
            return x

        def loss(x):
            return x

        grad_loss = jax.grad(loss)
        body = lambda c, x: (c, x)
        out = jax.lax.scan(body, 0, None)
    """)
    traced = {getattr(fn, "name", "<lambda>"): t for fn, t in model.traced.items()}
    assert set(traced) == {"step", "loss", "<lambda>"}
    assert traced["step"].static_params == ("n", "mode")
    assert traced["loss"].how == "jax.grad"


def test_aliases_from_config():
    recognizer = Recognizer.with_aliases({"tjax.custom_vjp": "static_argnums"}, {})
    model = model_of("""
        from tjax import custom_vjp

        @custom_vjp(static_argnums=(1,))
        def f(x, n):
            return x
    """, recognizer)
    (d,) = model.derivatives
    assert d.nondiff == (1,) and d.is_alias


def test_python_312_syntax_is_skipped_not_fatal():
    text = textwrap.dedent("""
        import jax

        type Vector = list[float]

        @jax.custom_vjp
        def f(x):
            return x
    """)
    d = collect(parse(text), text.splitlines()).derivatives[0]
    assert d.anchor.lineno == 6


def test_partial_of_defjvp_as_a_decorator_is_a_registration():
    model = model_of("""
        import jax
        from functools import partial

        @jax.custom_jvp
        def f(x):
            return x

        @partial(f.defjvp, symbolic_zeros=True)
        def f_jvp(primals, tangents):
            return primals[0], tangents[0]
    """)
    (d,) = model.derivatives
    assert d.registration.keywords == {"symbolic_zeros": d.registration.keywords["symbolic_zeros"]}
    assert d.rule("jvp").name == "f_jvp"
