"""vjplint.facts.value_kinds: the kinds the engine infers, and the chains it quotes."""

from __future__ import annotations

import ast
import textwrap

from vjplint.facts.collect import collect
from vjplint.facts.kinds import ARRAY, CALLABLE, SCALAR, TUPLE, UNKNOWN, Kind, join


def _kinds(source: str, line: int):
    text = textwrap.dedent(source)
    module = ast.parse(text)
    model = collect(module, text.splitlines(True))
    values = model.facts.values()
    found = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.lineno == line:
            found[node.id] = values.of(node)
    return found


HEADER = """\
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f(n, x):
    return x * n

def f_fwd(n, x):
    y = jnp.sin(x)
    return y, (y, 2)

def f_bwd(n, res, g):
    y, k = res
    return (g * y * k,)

f.defvjp(f_fwd, f_bwd)
"""


def test_roles_residuals_and_unpacking() -> None:
    kinds = _kinds(HEADER, 15)  # return (g * y * k,)
    assert kinds["g"].tag == ARRAY and "cotangent" in kinds["g"].why
    assert kinds["y"].tag == ARRAY
    assert kinds["y"].why == "`y` is unpacked from `res` at line 14"
    assert kinds["k"].tag == SCALAR and kinds["k"].dtype == "int"
    assert _kinds(HEADER, 7)["n"].tag == UNKNOWN  # the nondiff slot itself is what the verdict decides


def test_tracer_chain_through_a_helper_and_a_tuple() -> None:
    source = HEADER + """
def stats(v):
    return jnp.mean(v), jnp.std(v)

@jax.jit
def step(v):
    m, s = stats(v)
    return f(s, v)
"""
    s = _kinds(source, 25)["s"]
    assert s.tag == ARRAY
    assert s.traced == ("`s` is unpacked from `stats(v)` at line 24; `jnp.std(v)` is computed from a traced value "
                        "(`v` is a parameter of `step`, which is traced by `jax.jit`)")


def test_callable_carries_its_captures_through_grad_and_partial() -> None:
    source = """
import functools
import jax
import jax.numpy as jnp

def solve(theta, x0):
    objective = lambda x: jnp.sum((x - theta) ** 2)
    g = jax.grad(objective)
    p = functools.partial(objective, x0)
    return g, p
"""
    kinds = _kinds(source, 10)
    assert kinds["g"].tag == CALLABLE and [n for n, _ in kinds["g"].captures] == ["theta"]
    assert kinds["p"].tag == CALLABLE and [n for n, _ in kinds["p"].captures] == ["theta", "argument 1 of the partial"]


def test_self_attributes_and_callers_of_a_class() -> None:
    source = """
import jax.numpy as jnp

class Model:
    def __init__(self, scale, w):
        self.scale = scale
        self.w = jnp.ones(w)

    def apply(self, x):
        return self.scale * x + self.w

MODEL = Model(1.5, 3)
"""
    values = _kinds(source, 10)
    module = ast.parse(textwrap.dedent(source))
    model = collect(module, textwrap.dedent(source).splitlines(True))
    attrs = [n for n in ast.walk(module) if isinstance(n, ast.Attribute) and n.lineno == 10]
    kinds = {a.attr: model.facts.values().of(a) for a in attrs}
    assert kinds["scale"].tag == SCALAR and kinds["scale"].dtype == "float"
    assert kinds["w"].tag == ARRAY and kinds["w"].why == "`self.w` = `jnp.ones(w)` at line 7"
    assert values["self"].tag == "module"


def test_jvp_rule_primals_are_a_tuple_of_arrays() -> None:
    source = """
from functools import partial
import jax

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def f(c, x):
    return c * x

@f.defjvp
def f_jvp(c, primals, tangents):
    (x,), (t,) = primals, tangents
    return f(c, x), c * t
"""
    assert _kinds(source, 11)["primals"].tag == TUPLE
    kinds = _kinds(source, 12)
    assert kinds["x"].tag == ARRAY and kinds["t"].tag == ARRAY


def test_join_is_precision_first() -> None:
    a, s = Kind(ARRAY, "float"), Kind(SCALAR, "int")
    assert join(a, Kind(ARRAY, "int")).tag == ARRAY and join(a, Kind(ARRAY, "int")).dtype is None
    assert join(a, s).tag == "maybe"
    assert join(a, Kind(UNKNOWN)).tag == UNKNOWN
    assert join(Kind(ARRAY, traced="x"), Kind(ARRAY)).traced is None


def _verdicts(source: str):
    from vjplint.facts.infer import Hints

    text = textwrap.dedent(source)
    model = collect(ast.parse(text), text.splitlines(True))
    return {v.name: v for d in model.derivatives for v in model.facts.verdicts(d, Hints())}, model


RULES = """
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def f({p}, x):
    return {primal}

def f_fwd({p}, x):
    return f({p}, x), x

def f_bwd({p}, x, g):
    return ({bwd},)

f.defvjp(f_fwd, f_bwd)
"""


def test_weak_uses_add_up_only_without_static_evidence() -> None:
    several = RULES.format(p="rate", primal="jnp.exp(-rate * x)", bwd="-rate * g")
    v = _verdicts(several)[0]["rate"]
    assert v.level == "maybe"
    assert v.best("array").reason == "is used as array data in `-rate * x` (line 8), `-rate * g` (line 14)"
    one = RULES.format(p="rate", primal="jnp.exp(-rate * x)", bwd="g")
    assert _verdicts(one)[0]["rate"].level is None
    literal = several + "\ny = f(0.5, jnp.ones(3))\n"
    assert _verdicts(literal)[0]["rate"].level is None
    power = RULES.format(p="k", primal="x ** k", bwd="g * x ** k")
    assert _verdicts(power)[0]["k"].level is None  # an exponent is a Python number more often than not


def test_a_name_is_a_hint_never_stronger_than_usage() -> None:
    data = RULES.format(p="fn", primal="jnp.where(fn > 0, x, 0.0)", bwd="g")
    v = _verdicts(data)[0]["fn"]
    assert v.level == "maybe" and v.best("array").reason == "is compared as array data: `jnp.where(fn > 0, x, 0.0)`"
    tolerance = RULES.format(p="rtol", primal="jnp.clip(x, 0.0, rtol)", bwd="g")
    assert _verdicts(tolerance)[0]["rtol"].level is None  # odeint-style tolerances are Python floats


def test_transformations_of_the_custom_derivative() -> None:
    from vjplint.facts.infer import static_boundaries, traced_boundaries

    source = RULES.format(p="n", primal="x * n", bwd="g * n") + """
a = jax.jit(f)
b = jax.jit(f, static_argnums=0)
c = jax.vmap(f, in_axes=(None, 0))
d = jax.grad(f, argnums=1)
e = jax.lax.cond(True, f, f, 1.0, 2.0)
"""
    verdicts, model = _verdicts(source)
    d = model.derivatives[0]
    assert [(call.lineno, p, verb) for call, p, verb in traced_boundaries(model, d)] == [
        (18, 0, "does not mark it static"), (22, 0, "passes it a traced operand")]
    assert [(call.lineno, p) for call, p in static_boundaries(model, d)] == [(19, 0), (20, 0)]
    assert verdicts["n"].level is None  # marked static twice: a Python value


def test_configured_names_are_the_weakest_source_of_kinds() -> None:
    from vjplint.facts.infer import Hints

    text = textwrap.dedent("""\
        def apply(mask, steps, x=1.0):
            return mask, steps, x
        """)
    module = ast.parse(text)
    model = collect(module, text.splitlines(True), hints=Hints(frozenset({"mask", "x"}), frozenset({"steps"})))
    values = model.facts.values()
    found = {n.id: values.of(n) for n in ast.walk(module) if isinstance(n, ast.Name) and n.lineno == 2}
    assert (found["mask"].tag, found["mask"].why) == (ARRAY, "`mask` is listed in `array-names`")
    assert (found["steps"].tag, found["steps"].why) == (SCALAR, "`steps` is listed in `static-names`")
    assert found["x"].tag == SCALAR and found["x"].why == "`x` defaults to `1.0`"  # the default wins


def test_callers_in_other_modules_give_parameters_their_kinds() -> None:
    from vjplint.model.run_facts import RunFacts

    text = textwrap.dedent("""\
        def scale(c, x):
            return c * x
        """)
    module = ast.parse(text)
    model = collect(module, text.splitlines(True), run=RunFacts(rows=(
        ("call", "scale", "train.py:7", "step", True,
         (("0", "array", "float", "gate", "`gate` = `jax.nn.sigmoid(w)` at train.py:6",
           "`w` is a parameter of `step`, which is traced by `jax.jit`", "", ""),)),)))
    values = model.facts.values()
    found = {n.id: values.of(n) for n in ast.walk(module) if isinstance(n, ast.Name) and n.lineno == 2}
    assert found["c"].tag == ARRAY and found["c"].dtype == "float"
    assert found["c"].why == "`c` receives `gate` at train.py:7 (`gate` = `jax.nn.sigmoid(w)` at train.py:6)"
    assert found["c"].traced == ("`c` receives `gate` at train.py:7 (`gate` = `jax.nn.sigmoid(w)` at train.py:6); "
                                 "`w` is a parameter of `step`, which is traced by `jax.jit`")
    assert found["x"].tag == UNKNOWN  # no caller passes it


def test_record_of_a_class_keeps_the_class_and_finds_its_traced_field() -> None:
    source = """
from dataclasses import dataclass
import jax

@dataclass
class Ramp:
    offset: float
    slope: jax.Array

    def __call__(self, x):
        return self.slope * x + self.offset

@jax.jit
def loss(slope, x):
    ramp = Ramp(0.5, slope)
    return ramp(x)
"""
    kinds = _kinds(source, 16)
    ramp = kinds["ramp"]
    assert ramp.tag == "record"
    assert isinstance(ramp.node, ast.ClassDef) and ramp.node.name == "Ramp"
    assert ramp.traced is None
    assert ramp.traced_leaf() == (".slope", "`ramp` = `Ramp(0.5, slope)` at line 15; `slope` is a parameter of `loss`, "
                                           "which is traced by `jax.jit`")
    assert Kind(TUPLE, items=(Kind(SCALAR), Kind(ARRAY, traced="t"))).traced_leaf() == ("[1]", "t")
    assert Kind(TUPLE, items=(Kind(SCALAR), Kind(ARRAY))).traced_leaf() is None


def test_an_object_of_a_plain_class_holds_what_its_init_stores_from_this_call():
    source = """\
    import jax
    import jax.numpy as jnp

    class Scale:
        def __init__(self, params, steps=2):
            self.gain = params["gain"]
            self.steps = steps

    @jax.jit
    def loss(gain):
        net = Scale({"gain": gain})
        return net

    def build(w):
        layer = Scale({"gain": w}, 3)
        return layer
    """
    net = _kinds(source, 12)["net"]
    assert net.tag == "record" and net.node.name == "Scale"
    assert net.field("steps").tag == SCALAR
    assert net.traced_leaf() == (".gain", "`net` = `Scale({\"gain\": gain})` at line 11; `self.gain` = "
                                          "`params[\"gain\"]` at line 6; `params` receives `{\"gain\": gain}` at "
                                          "line 11; `gain` is a parameter of `loss`, which is traced by `jax.jit`")
    layer = _kinds(source, 16)["layer"]
    assert layer.traced_leaf() is None and layer.field("steps").tag == SCALAR
    where, (fn, param, chain) = layer.origin_leaf()
    assert (where, fn.name, param) == (".gain", "build", "w")
    assert chain == ("`layer` = `Scale({\"gain\": w}, 3)` at line 15; `self.gain` = `params[\"gain\"]` at line 6; "
                     "`params` receives `{\"gain\": w}` at line 15; `w` is a parameter of `build`")


def test_a_parameter_nothing_shows_static_or_traced_keeps_its_origin():
    source = """\
    def helper(rate, n: int, scale=2.0):
        k = 2.0 * rate["k"]
        return k, n, scale
    """
    kinds = _kinds(source, 3)
    assert kinds["k"].tag == UNKNOWN and kinds["k"].origin[1:] == (
        "rate", "`k` = `2.0 * rate[\"k\"]` at line 2; `rate` is a parameter of `helper`")
    assert kinds["n"].origin is None and kinds["scale"].origin is None  # annotated / defaulted: static


def test_an_attribute_assigned_outside_init_is_not_a_field_of_the_object():
    source = """\
    class Box:
        def __init__(self, w):
            self.w = w
            self.n = 1

        def reset(self, w):
            self.w = w

    def make(v):
        box = Box(v)
        return box
    """
    box = _kinds(source, 11)["box"]
    assert [n for n, _ in box.fields] == ["n"]


def _not_a_sequence(source: str, name: str):
    text = textwrap.dedent(source)
    module = ast.parse(text)
    model = collect(module, text.splitlines(True))
    fn = next(n for n in ast.walk(module) if isinstance(n, ast.FunctionDef))
    returned = next(n for n in ast.walk(fn) if isinstance(n, ast.Return))
    assert isinstance(returned.value, ast.Name) and returned.value.id == name
    return model.facts.not_a_sequence(returned.value, fn)


def test_a_name_bound_several_times_is_an_array_when_every_binding_is_one() -> None:
    rebound = """\
    import jax.numpy as jnp

    def f(x, w, b):
        out = jnp.dot(x, w)
        out = out + b
        return out
    """
    assert _not_a_sequence(rebound, "out") == "an array"
    # the first binding is not shown to be an array: `out + b` may concatenate tuples
    first_unknown = rebound.replace("jnp.dot(x, w)", "g(x, w)")
    assert _not_a_sequence(first_unknown, "out") is None
    # a later binding makes it a tuple
    to_tuple = rebound.replace("out = out + b", "out = (out, b)")
    assert _not_a_sequence(to_tuple, "out") is None
    # an augmented assignment is not a plain binding: not claimed
    augmented = rebound.replace("out = out + b", "out += b")
    assert _not_a_sequence(augmented, "out") is None


def test_a_three_argument_where_is_an_array_a_one_argument_where_is_not_claimed() -> None:
    source = """\
    import jax.numpy as jnp

    def f(c, a, b):
        out = jnp.where(c, a, b)
        return out
    """
    assert _not_a_sequence(source, "out") == "an array"
    assert _not_a_sequence(source.replace("jnp.where(c, a, b)", "jnp.where(c)"), "out") is None
