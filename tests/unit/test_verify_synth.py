"""The static half of verification, in process and without JAX: what changed between two
texts, how each parameter's input is described, the settings, where a module lives."""

from __future__ import annotations

import ast
import textwrap
import types
from pathlib import Path

import pytest

from tests.conftest import ROOT
from vjplint.facts.collect import collect
from vjplint.settings.config import Config, ConfigError
from vjplint.verify.api import VerifySettings, functions_changed, module_location
from vjplint.verify.synth import plan_function

DATA = ROOT / "tests" / "data" / "verify"


def plan(source: str, name: str, moved, example=None):
    source = textwrap.dedent(source)
    model = collect(ast.parse(source), source.splitlines())
    d = next(d for d in model.derivatives if d.name == name)
    return plan_function(model, d, moved, example)


def specs(p) -> dict:
    return {s["name"]: {k: v for k, v in s.items() if k not in ("name", "position")} for s in p.params}


def test_functions_changed_lists_the_moved_positions_in_source_order():
    original = (DATA / "ops.py").read_text()
    assert functions_changed(original, (DATA / "ops_fixed.py").read_text()) == [
        {"name": "clip_gradient", "moved_positions": [0, 1]},
        {"name": "scaled_identity", "moved_positions": [0]},
        {"name": "masked_apply", "moved_positions": [1]},
    ]
    assert functions_changed(original, original) == []
    assert functions_changed(original, "def broken(:\n") == []


def test_jaxtyping_dimensions_are_shared_and_distinct():
    p = plan('''
        from functools import partial
        import jax
        from jaxtyping import Array, Float, Int

        @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
        def f(w: Float[Array, "b n"], idx: Int[Array, "n"], x: Float[Array, "*batch n"], s: Float[Array, ""]):
            return x
    ''', "f", [0, 1])
    assert specs(p) == {
        "w": {"kind": "array", "dtype": "float32", "shape": [3, 4], "role": "moved",
              "source": "annotation `Float[Array, 'b n']`"},
        "idx": {"kind": "array", "dtype": "int32", "shape": [4], "role": "moved",
                "source": "annotation `Int[Array, 'n']`"},
        "x": {"kind": "array", "dtype": "float32", "shape": [4], "role": "diff",
              "source": "annotation `Float[Array, '*batch n']`"},
        "s": {"kind": "array", "dtype": "float32", "shape": [], "role": "diff",
              "source": "annotation `Float[Array, '']`"},
    }


def test_call_sites_give_literals_and_module_level_expressions_only():
    p = plan('''
        from functools import partial
        import jax
        import jax.numpy as jnp

        SCALE = 2.0

        @partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2))
        def f(fn, lo, w, x):
            return x

        def step(x, local_w):
            return f(lambda v: v * SCALE, -0.5, local_w, x)

        y = f(jnp.tanh, 0.25, jnp.ones(3) * SCALE, jnp.zeros(3))
    ''', "f", [1, 2])
    s = specs(p)
    # The call with the most usable arguments comes first; a lambda over module names is kept.
    assert s["fn"] == {"kind": "expr", "expr": "jnp.tanh", "source": "call site, line 15", "role": "static"}
    assert s["lo"] == {"kind": "literal", "value": 0.25, "source": "call site, line 15", "role": "moved"}
    assert s["w"] == {"kind": "expr", "expr": "jnp.ones(3) * SCALE", "source": "call site, line 15", "role": "moved"}
    assert s["x"]["kind"] == "expr"


def test_a_lambda_capturing_a_local_is_not_evaluated():
    p = plan('''
        from functools import partial
        import jax

        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def f(fn, x):
            return fn(x)

        def step(x, k):
            return f(lambda v: v * k, x)
    ''', "f", [])
    # Not the caller's lambda: `fn` is called in the primal, so a function is synthesised for it.
    assert specs(p)["fn"] == {"kind": "callable", "arity": 1, "role": "static", "source": "called: `fn(x)`"}


def test_a_parameter_neither_called_nor_described_is_unknown():
    p = plan('''
        from functools import partial
        import jax

        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def f(fn, x):
            return jax.tree_util.tree_map(fn, x)
    ''', "f", [])
    assert specs(p)["fn"] == {"kind": "unknown", "role": "static",
                              "reason": "`fn`: no annotation, default or call site gives a value"}


def test_a_custom_vjp_its_enclosing_function_calls_is_verified_through_that_function():
    p = plan('''
        from functools import partial
        import jax
        import jax.numpy as jnp

        def outer(eqn, x, w):
            @partial(jax.custom_vjp, nondiff_argnums=(1,))
            def inner(x, w):
                return jnp.einsum(eqn, x, w)
            inner.defvjp(lambda x, w: (inner(x, w), None), lambda w, _, g: (g,))
            return inner(x, w)

        def use(x, w):
            return outer("bi,io->bo", x, w)
    ''', "inner", [1])
    assert p.unverifiable is None and p.qualname == "inner"
    assert p.driver["qualname"] == "outer" and p.driver["target"] == "outer.<locals>.inner"
    assert specs(types.SimpleNamespace(params=p.driver["params"]))["eqn"] == {
        "kind": "literal", "value": "bi,io->bo", "source": "call site, line 14", "role": "diff"}
    assert [(s["name"], s["kind"], s["role"]) for s in p.params] == [("x", "captured", "diff"),
                                                                    ("w", "captured", "moved")]


def test_a_custom_vjp_a_factory_returns_is_reached_where_the_module_binds_it():
    p = plan('''
        from functools import partial
        import jax

        def make(scale):
            @partial(jax.custom_vjp, nondiff_argnums=(0,))
            def inner(w, x):
                return x * w * scale
            inner.defvjp(lambda w, x: (inner(w, x), None), lambda w, _, g: (g * w,))
            return inner

        SCALER = make(2.0)
    ''', "inner", [0])
    assert (p.unverifiable, p.qualname, p.driver) == (None, "SCALER", None)


def test_defaults_keys_callables_and_scalars():
    p = plan('''
        from functools import partial
        from typing import Callable
        import jax

        @partial(jax.custom_vjp, nondiff_argnums=(0, 1, 2, 3))
        def f(act: Callable[[jax.Array, jax.Array], jax.Array], rng, eps: float, n: int, x, scale=1.5):
            keep = jax.random.bernoulli(rng, 0.5, x.shape)
            return act(x, keep) * eps * n * scale
    ''', "f", [1])
    s = specs(p)
    assert s["act"] == {"kind": "callable", "arity": 2, "role": "static",
                        "source": "annotation `Callable[[jax.Array, jax.Array], jax.Array]`"}
    assert s["rng"] == {"kind": "key", "shape": [], "role": "moved",
                        "source": "used as a PRNG key: `jax.random.bernoulli(rng, 0.5, x.shape)`"}
    assert s["eps"] == {"kind": "float", "role": "static", "source": "annotation `float`"}
    assert s["n"] == {"kind": "int", "role": "static", "source": "annotation `int`"}
    assert s["x"] == {"kind": "array", "dtype": "float32", "shape": None, "role": "diff",
                      "source": "assumed: a differentiable argument"}
    assert s["scale"] == {"kind": "default", "source": "default", "role": "diff"}


def test_an_object_read_through_attributes_is_built_from_its_class():
    p = plan('''
        from functools import partial
        import jax
        import jax.numpy as jnp

        class Dense:
            def __init__(self, kernel: jax.Array, bias):
                self.kernel, self.bias = kernel, bias

        class Other:
            def __init__(self, kernel, scale):
                pass

        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def apply(layer, x):
            return x @ layer.kernel + layer.bias + layer.kernel.shape[0]
    ''', "apply", [0])
    assert specs(p)["layer"] == {
        "kind": "instance", "class": "Dense", "role": "moved",
        "source": "the class whose fields match `layer.bias`, `layer.kernel`",
        "fields": [{"kind": "array", "dtype": "float32", "shape": None, "source": "annotation `jax.Array`",
                    "name": "kernel"},
                   {"kind": "array", "dtype": "float32", "shape": None, "name": "bias"}],
    }


@pytest.mark.parametrize("source, reason", [
    ('''
        def make():
            @partial(jax.custom_vjp, nondiff_argnums=(0,))
            def f(w, x):
                return x
            return f
     ''', "`f` is defined inside `make`, which neither calls it nor is a factory whose result the module binds: "
         "the harness can only reach module-level functions and class attributes"),
    ('''
        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def f(w, *xs):
            return xs
     ''', "`f` takes `*xs`: the number of arguments is not known"),
])
def test_statically_unverifiable(source, reason):
    header = "from functools import partial\nimport jax\n"
    assert plan(header + textwrap.dedent(source), "f", [0]).unverifiable == reason


def test_settings_are_validated():
    assert VerifySettings.from_config(Config()) == VerifySettings()
    cfg = Config(verify=(("examples", {"m.f": "m:args"}), ("timeout", 30)))
    assert VerifySettings.from_config(cfg) == VerifySettings((("m.f", "m:args"),), 30.0, None)
    for table, message in [
        ({"exampels": {}}, "unknown key in [tool.vjplint.verify]: exampels (did you mean 'examples'?) "
                                 "(known keys: examples, timeout, python)"),
        ({"timeout": 0}, "[tool.vjplint.verify] `timeout` must be a positive number of seconds"),
        ({"examples": {"m.f": "no_colon"}},
         "[tool.vjplint.verify] `examples` must be a table {\"module.function\" = \"module:make_args\"}"),
    ]:
        with pytest.raises(ConfigError) as info:
            VerifySettings.from_config(Config(verify=tuple(table.items())))
        assert str(info.value) == message


def test_module_location_follows_packages(tmp_path: Path):
    package = tmp_path / "src" / "pkg" / "sub"
    package.mkdir(parents=True)
    for d in (package, package.parent):
        (d / "__init__.py").write_text("")
    (package / "ops.py").write_text("")
    cfg = Config(root=str(tmp_path))
    name, path, cwd = module_location(package / "ops.py", cfg)
    assert name == "pkg.sub.ops"
    assert path == [str((tmp_path / "src").resolve()), str(tmp_path.resolve())]
    assert cwd == str(tmp_path.resolve())
    assert module_location(package / "__init__.py", cfg)[0] == "pkg.sub"


def test_a_callers_local_that_shadows_a_module_name_is_not_evaluated_in_the_module():
    """Issue 37: `scale` at the call is `apply`'s parameter, not the module's string: evaluating it
    in the module gave the string, the original raised with it, and verification refused. The call
    site gives nothing for it, so the annotation does."""
    p = plan('''
        from functools import partial
        import jax

        scale = "per-channel"

        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def f(scale: jax.Array, x):
            return x * scale

        def apply(scale, x):
            return f(scale, x)
    ''', "f", [0])
    assert specs(p)["scale"] == {"kind": "array", "dtype": "float32", "shape": None,
                                 "source": "annotation `jax.Array`", "role": "moved"}


def test_a_callers_parameter_gives_its_default_when_never_rebound():
    """Issue 37 (maxtext's mHC kernels): `pre(x, perm, *, config=common.MhcKernelConfig())` calls
    `_pre_op(config, x, perm)`. The call site names `pre`'s parameter, which is not evaluated in
    the module; its default, an expression over module-level names, is. A parameter the caller
    rebinds, or whose default is None, gives nothing (the next rule does)."""
    p = plan('''
        from functools import partial
        import jax
        from pkg import common

        @partial(jax.custom_vjp, nondiff_argnums=(0, 2, 3))
        def _op(config, x, perm: jax.Array, scale: jax.Array):
            return x * scale

        def pre(x, perm, scale=None, *, config=common.Config(block=8)):
            return _op(config, x, perm, scale)

        def other(x, perm, scale, config=common.Config()):
            config = config.replace(block=16)
            return _op(config, x, perm, scale)
    ''', "_op", [2, 3])
    s = specs(p)
    assert s["config"] == {"kind": "expr", "expr": "common.Config(block=8)", "role": "static",
                           "source": "call site, line 11: the default of `pre`'s parameter `config`"}
    assert s["scale"] == {"kind": "array", "dtype": "float32", "shape": None, "role": "moved",
                          "source": "annotation `jax.Array`"}
    # rebound in `other`: its call gives nothing for `config`, so `pre`'s call is the one used
    q = plan('''
        from functools import partial
        import jax
        from pkg import common

        @partial(jax.custom_vjp, nondiff_argnums=(0, 2))
        def _op(config, x, perm: jax.Array):
            return x

        def other(x, perm, config=common.Config()):
            config = config.replace(block=16)
            return _op(config, x, perm)
    ''', "_op", [2])
    assert specs(q)["config"]["kind"] == "unknown"


SCALED = '''
    from functools import partial
    import jax
    import jax.numpy as jnp

    @partial(jax.custom_vjp, nondiff_argnums=(1, 2))
    def scaled(x, scale, n):
        return jnp.tile(x * scale, n)

    def fwd(x, scale, n):
        return scaled(x, scale, n), None

    def bwd(scale, n, res, g):
        return (g.reshape(n, -1).sum(0) * scale,)

    scaled.defvjp(fwd, bwd)
'''


def test_a_nondiff_parameter_used_as_a_number_is_a_float_in_the_one_synthesiser():
    """verify (which moves `scale` out of nondiff_argnums: an array) and check-grads (where it stays
    nondiff) synthesise it from the same plan; `n`, a size, stays unknown."""
    p = plan(SCALED, "scaled", [])
    assert specs(p)["scale"] == {"kind": "float", "role": "static",
                                 "source": "assumed: a nondiff argument used as a number (`x * scale`)"}
    assert specs(p)["n"]["kind"] == "unknown"
    assert specs(plan(SCALED, "scaled", [1]))["scale"] == {"kind": "array", "dtype": "float32", "shape": None,
                                                          "role": "moved",
                                                          "source": "assumed: a moved argument (an array, as the "
                                                                    "fix assumed)"}


CACHED = '''
    import jax


    def make_cache(a):
        return jax.lax.stop_gradient(2.0 * a)


    @jax.custom_jvp
    def solve(a, cache, b):
        del a
        return b / cache


    @solve.defjvp
    def solve_jvp(primals, tangents):
        a, cache, b = primals
        da, _dc, db = tangents
        return solve(a, cache, b), db / a - b * da / (a * a)


    def model(m, v):
        cache = make_cache(m)
        return solve(m, cache, v)
'''


def derived_of(source: str) -> dict:
    source = textwrap.dedent(source)
    model = collect(ast.parse(source), source.splitlines())
    d = next(d for d in model.derivatives if d.name == "solve")
    return {s["name"]: s.get("derived") for s in plan_function(model, d, (), None, from_callers=True).params}


def test_an_argument_every_call_computes_from_another_is_derived_from_it():
    # dynamiqs's QR cache: moved with `a`, recomputed by the module's function (check-grads).
    assert derived_of(CACHED) == {"a": None, "cache": {"from": 0, "function": "make_cache", "line": 23}, "b": None}
    # Not when one call passes something else, nor when the function is not the module's.
    other = CACHED + "\n\n    def other(m, c, v):\n        return solve(m, c, v)\n"
    assert derived_of(other) == {"a": None, "cache": None, "b": None}
    elsewhere = CACHED.replace("cache = make_cache(m)", "cache = jax.lax.stop_gradient(m)")
    assert derived_of(elsewhere) == {"a": None, "cache": None, "b": None}
