"""Each wrapper's contract as the model reads it (issue #45, docs/facts/jax-errors.md "Wrappers:
routes (wrap11)"): the keywords its creator takes, in every route to the creator, and equinox's
deprecated `defvjp` protocol. Outcomes measured on JAX 0.10.2, flax 0.12.8, equinox 0.13.8 by the
fixtures of VJP355, VJP305 and VJP317."""

from __future__ import annotations

import pytest

from tests.conftest import lint

pytestmark = pytest.mark.unit

EQX_ROUTES = {
    "partial": "import functools\nimport equinox as eqx\n\n@functools.partial(eqx.filter_custom_vjp, {kw})\n"
               "def f(x, n):\n    return x * n\n",
    "call": "import equinox as eqx\n\ndef _f(x, n):\n    return x * n\n\nf = eqx.filter_custom_vjp(_f, {kw})\n",
    "from-import": "from functools import partial\nfrom equinox import filter_custom_jvp\n\n"
                   "@partial(filter_custom_jvp, {kw})\ndef f(x, n):\n    return x * n\n",
    "plain-import": "import equinox\n\ndef _f(x, n):\n    return x * n\n\nf = equinox.filter_custom_jvp(_f, {kw})\n",
    "factory": "import functools\nimport equinox as eqx\n\ndef make():\n"
               "    @functools.partial(eqx.filter_custom_vjp, {kw})\n    def f(x, n):\n        return x * n\n"
               "    return f\n",
}


@pytest.mark.parametrize("route", sorted(EQX_ROUTES))
def test_equinox_creator_rejects_nondiff_argnums_in_every_route(route):
    source = EQX_ROUTES[route].format(kw="nondiff_argnums=(1,)")
    found = [d for d in lint(source, select=["VJP355"])]
    assert [d.code for d in found] == ["VJP355"]
    assert "takes only the function, not `nondiff_argnums`" in found[0].message
    assert "__init__() got an unexpected keyword argument 'nondiff_argnums'" in found[0].message
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "nondiff_argnums" in text)
    assert found[0].location.row == line


@pytest.mark.parametrize("route", sorted(EQX_ROUTES))
def test_equinox_creator_given_its_function_by_keyword_is_silent(route):
    source = EQX_ROUTES[route].replace("_f, {kw})", "fn=_f)").replace(", {kw})", ")")
    assert lint(source, select=["VJP355"]) == []


def test_nnx_creator_takes_graph_keywords_but_not_nondiff_argnames():
    base = ("import functools\nfrom flax import nnx\n\n@functools.partial(nnx.custom_vjp, {kw})\n"
            "def f(x, n):\n    return x * n\n")
    ok = base.format(kw="nondiff_argnums=(1,), graph=True, graph_updates=False")
    assert lint(ok, select=["VJP355"]) == []
    bad = lint(base.format(kw="nondiff_argnames=('n',)"), select=["VJP355"])
    assert [(d.code, d.location.row) for d in bad] == [("VJP355", 4)]
    assert "`nnx.custom_vjp` takes `graph`, `graph_updates` and `nondiff_argnums`, not `nondiff_argnames`" \
        in bad[0].message


def test_in_house_wrapper_keeps_its_own_keywords():
    source = ("import functools\nimport jax\n\ndef my_vjp(fn, static=()):\n    return jax.custom_vjp(fn)\n\n"
              "@functools.partial(my_vjp, static=(1,))\ndef f(x, n):\n    return x * n\n")
    assert lint(source, select=["VJP355"]) == []


DEFVJP = ("import equinox as eqx\n\n@eqx.filter_custom_vjp\ndef f(x, n):\n    return x * n\n\n"
          "def f_fwd(x, n):\n    return x * n, n\n\n{bwd}\n\nf.defvjp(f_fwd, f_bwd)\n")


def test_equinox_deprecated_defvjp_calls_bwd_with_the_primal_arguments():
    found = lint(DEFVJP.format(bwd="def f_bwd(res, g):\n    return res * g"), select=["VJP305", "VJP303"])
    assert [(d.code, d.location.row) for d in found] == [("VJP305", 10)]
    assert "equinox's deprecated `f.defvjp` calls it with 4 positional arguments, bwd(residuals, g, x, n)" \
        in found[0].message
    assert "f_bwd() takes 2 positional arguments but 4 were given" in found[0].message


@pytest.mark.parametrize("bwd", ["def f_bwd(res, g, x, n):\n    return res * g",
                                 "def f_bwd(res, g, *args):\n    return res * g"])
def test_equinox_deprecated_defvjp_with_its_own_protocol_is_silent(bwd):
    assert lint(DEFVJP.format(bwd=bwd), select=["VJP305", "VJP303"]) == []
