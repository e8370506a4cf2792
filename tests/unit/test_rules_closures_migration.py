"""VJP201-VJP203 and VJP401-VJP402 through the core API: exact codes, positions, messages and
fixes for the spellings that are easy to get wrong (aliases, comments, look-alike options)."""

from __future__ import annotations

import ast
import textwrap
from typing import List, Tuple

import pytest

from tests.conftest import lint
from vjplint.diagnostics import Applicability, Diagnostic


def check(source: str, code: str) -> List[Diagnostic]:
    return lint(textwrap.dedent(source), select=[code])


def where(diagnostics: List[Diagnostic]) -> List[Tuple[str, int, int]]:
    return [(d.code, d.location.row, d.location.column) for d in diagnostics]


def apply_fix(source: str, d: Diagnostic) -> str:
    """Apply a diagnostic's edits (1-based rows and code-point columns) to `source`."""
    assert d.fix is not None
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(row: int, column: int) -> int:
        return starts[row - 1] + column - 1 if row <= len(lines) else len(source)

    text = source
    for edit in sorted(d.fix.edits, key=lambda e: (e.location.row, e.location.column), reverse=True):
        text = text[: offset(edit.location.row, edit.location.column)] + edit.content + \
            text[offset(edit.end_location.row, edit.end_location.column):]
    return text


# -- VJP401 direct-linearize-flag ----------------------------------------------------------------

DEAD = ("a dead flag: JAX 0.10.2 defines `jax_use_direct_linearize` but reads it nowhere (`grad` always "
        "linearizes with LinearizeTracer), so this changes nothing.")


@pytest.mark.parametrize("imports, call", [
    ("import jax", "jax.config.update"),
    ("from jax import config", "config.update"),
    ("from jax import config as jcfg", "jcfg.update"),
    ("from jax._src import config", "config.update"),
    ("import jax._src.config as jc", "jc.config.update"),
    ("from jax._src.config import config as c", "c.update"),
])
def test_vjp401_config_update_however_config_was_imported(imports, call):
    source = f'{imports}\n\n{call}("jax_use_direct_linearize", False)\n'
    found = check(source, "VJP401")
    assert where(found) == [("VJP401", 3, 1)]
    assert found[0].message == f'`{call}("jax_use_direct_linearize", False)` sets {DEAD} Remove it'


def test_vjp401_silent_on_comments_docstrings_other_options_and_reads():
    found = check('''
        """Call jax.config.update("jax_use_direct_linearize", False) or pass --jax_use_direct_linearize."""
        import os
        import jax
        # jax.config.update("jax_use_direct_linearize", False)
        jax.config.update("jax_enable_x64", True)
        FLAGS = ["--jax_enable_x64", "--jax_use_direct_linearize_extra"]
        value = os.environ.get("JAX_USE_DIRECT_LINEARIZE")
        current = jax.config.jax_use_direct_linearize
        note = f"--jax_use_direct_linearize={value}"

        def helper():
            """Do not set --jax_use_direct_linearize here."""
    ''', "VJP401")
    assert found == []


def test_vjp401_a_local_config_object_is_not_jax():
    found = check('''
        class Config(dict):
            def update(self, key, value):
                self[key] = value

        config = Config()
        config.update("jax_use_direct_linearize", False)
    ''', "VJP401")
    assert found == []


def test_vjp401_environment_absl_and_context_manager_spellings():
    found = check('''
        import os
        import sys
        from os import environ
        from jax._src import config

        os.environ["JAX_USE_DIRECT_LINEARIZE"] = "0"
        environ.setdefault("JAX_USE_DIRECT_LINEARIZE", "false")
        os.putenv("JAX_USE_DIRECT_LINEARIZE", "0")
        sys.argv.extend(["--jax_use_direct_linearize=false", "-nojax_use_direct_linearize"])
        env = dict(os.environ, JAX_USE_DIRECT_LINEARIZE="0")
        with config.use_direct_linearize(False):
            pass
    ''', "VJP401")
    assert where(found) == [("VJP401", 7, 1), ("VJP401", 8, 1), ("VJP401", 9, 1), ("VJP401", 10, 18),
                            ("VJP401", 10, 54), ("VJP401", 11, 24), ("VJP401", 12, 6)]
    assert found[0].message.startswith('`os.environ["JAX_USE_DIRECT_LINEARIZE"] = ...` sets the environment '
                                       'variable of a dead flag')
    assert found[3].message == f"the absl flag `--jax_use_direct_linearize=false` sets {DEAD} Remove it"
    assert found[6].message == (f"`with config.use_direct_linearize(False):` sets {DEAD} Remove the `with` and "
                                f"dedent its body")
    assert [d.fix.applicability if d.fix else None for d in found] == [Applicability.SAFE] * 3 + [None] * 4


def test_vjp401_flag_name_through_a_module_constant():
    found = check('''
        import jax
        FLAG = "jax_use_direct_linearize"
        jax.config.update(FLAG, False)
    ''', "VJP401")
    assert where(found) == [("VJP401", 4, 1)]


def test_vjp401_fix_deletes_the_whole_line_with_its_newline():
    source = 'import jax\n\njax.config.update("jax_use_direct_linearize", False)  # old workaround\nx = 1\n'
    (d,) = check(source, "VJP401")
    assert d.fix is not None and d.fix.applicability is Applicability.SAFE
    assert [(e.location.row, e.location.column, e.end_location.row, e.end_location.column, e.content)
            for e in d.fix.edits] == [(3, 1, 4, 1, "")]
    assert apply_fix(source, d) == "import jax\n\nx = 1\n"


def test_vjp401_fix_deletes_a_multiline_statement():
    source = 'import jax\njax.config.update(\n    "jax_use_direct_linearize",\n    False,\n)\nprint(1)\n'
    (d,) = check(source, "VJP401")
    assert apply_fix(source, d) == "import jax\nprint(1)\n"


def test_vjp401_fix_on_the_last_line_without_newline():
    source = 'import jax\njax.config.update("jax_use_direct_linearize", False)'
    (d,) = check(source, "VJP401")
    assert apply_fix(source, d) == "import jax"


def test_vjp401_only_statement_of_a_block_becomes_pass():
    source = textwrap.dedent('''\
        from jax import config

        def setup_module():
            config.update("jax_use_direct_linearize", False)

        if __name__ == "__main__":
            config.update("jax_use_direct_linearize", True)
        else:
            pass
    ''')
    first, second = check(source, "VJP401")
    assert first.fix.message == "Replace the statement with `pass`"
    fixed = apply_fix(apply_fix(source, second), first)
    assert fixed == source.replace('config.update("jax_use_direct_linearize", False)', "pass").replace(
        'config.update("jax_use_direct_linearize", True)', "pass")
    ast.parse(fixed)


def test_vjp401_a_block_of_only_flag_settings_keeps_one_pass():
    source = textwrap.dedent('''\
        import os
        import jax

        def setup():
            jax.config.update("jax_use_direct_linearize", False)
            os.environ["JAX_USE_DIRECT_LINEARIZE"] = "0"
    ''')
    first, second = check(source, "VJP401")
    assert [e.content for e in first.fix.edits] == ["pass"]
    assert [e.content for e in second.fix.edits] == [""]
    for alone in (apply_fix(source, first), apply_fix(source, second)):
        ast.parse(alone)
    both = apply_fix(apply_fix(source, second), first)
    assert both == "import os\nimport jax\n\ndef setup():\n    pass\n"


def test_vjp401_no_fix_when_the_statement_shares_its_line():
    found = check('''
        import jax
        jax.config.update("jax_use_direct_linearize", False); x = 1
        if True: jax.config.update("jax_use_direct_linearize", False)
        y = [jax.config.update("jax_use_direct_linearize", False)]
    ''', "VJP401")
    assert where(found) == [("VJP401", 3, 1), ("VJP401", 4, 10), ("VJP401", 5, 6)]
    assert all(d.fix is None for d in found)


# -- VJP402 jvptracer-sniffing -------------------------------------------------------------------

SNIFF_TAIL = ("under `jax.grad`: JAX 0.10.2 differentiates (`grad`, `vjp`, `value_and_grad`, `jacrev`) with "
              "LinearizeTracer, whose repr is `GradTracer(...)`; only `jax.jvp`/`jacfwd` give a JVPTracer. Test "
              "`isinstance(x, jax.core.Tracer)` instead")


@pytest.mark.parametrize("imports, test", [
    ("from jax.interpreters.ad import JVPTracer", "isinstance(x, JVPTracer)"),
    ("from jax.interpreters.ad import JVPTracer as JT", "isinstance(x, JT)"),
    ("from jax.interpreters import ad", "isinstance(x, ad.JVPTracer)"),
    ("from jax._src.interpreters import ad", "isinstance(x, ad.JVPTracer)"),
    ("import jax._src.interpreters.ad as jad", "isinstance(x, jad.JVPTracer)"),
    ("", "isinstance(x, jax.interpreters.ad.JVPTracer)"),
    ("", 'type(x).__name__ == "JVPTracer"'),
    ("", '"JVPTracer" == x.__class__.__name__'),
    ("", '"JVPTracer" in repr(x)'),
    ("", '"JVPTracer" in str(type(x))'),
    ("", 'repr(x).startswith("JVPTracer")'),
    ("from jax.interpreters.ad import JVPTracer", "type(x) is JVPTracer"),
    ("from jax.interpreters.ad import JVPTracer", "issubclass(type(x), JVPTracer)"),
])
def test_vjp402_every_spelling_fires_with_an_unsafe_rewrite(imports, test):
    source = f"import jax\n{imports}\n\ndef f(x):\n    return {test}\n"
    (d,) = check(source, "VJP402")
    assert (d.location.row, d.location.column) == (5, 12)
    alias = " (`JT` is `jax.interpreters.ad.JVPTracer`)" if " as JT" in imports else ""
    assert d.message == f"`{test}`{alias} is silently False {SNIFF_TAIL}"
    assert d.fix is not None and d.fix.applicability is Applicability.UNSAFE
    assert apply_fix(source, d).splitlines()[4] == "    return isinstance(x, jax.core.Tracer)"


@pytest.mark.parametrize("setup, test, evidence", [
    ('    name = type(x).__name__\n', 'name == "JVPTracer"', "`name` = `type(x).__name__` at line 9"),
    ('    name = type(x).__name__\n', "name in NAMES", "`name` = `type(x).__name__` at line 9; "
                                                     "`NAMES` = `(\"JVPTracer\",)` at line 5"),
    ('', "type(x).__name__ in frozenset(NAMES)", "`NAMES` = `(\"JVPTracer\",)` at line 5"),
    ('', "isinstance(x, TYPES)", "`TYPES` = `(JVPTracer,)` at line 6"),
])
def test_vjp402_follows_names_assigned_once(setup, test, evidence):
    """The class name or the types reach the test through a local or a module constant (no fix:
    rewriting a shared constant would change its other uses)."""
    source = (f"import jax\nfrom jax.interpreters.ad import JVPTracer\n\n\nNAMES = (\"JVPTracer\",)\n"
              f"TYPES = (JVPTracer,)\n\ndef f(x):\n{setup}    return {test}\n")
    (d,) = check(source, "VJP402")
    assert d.location.row == (10 if setup else 9)
    assert d.message.startswith(f"`{test}` ({evidence}) is silently False under `jax.grad`")
    assert d.fix is None or "TYPES" not in test and "NAMES" not in test


def test_vjp402_reassigned_name_is_not_followed():
    source = ("import jax\n\ndef f(x, other):\n    name = type(x).__name__\n    if other:\n"
              "        name = 'JVPTracer'\n    return name == 'JVPTracer'\n")
    assert check(source, "VJP402") == []


def test_vjp402_function_used_only_under_jvp_is_exempt():
    """Inside `jax.jvp`/`jacfwd` the inputs are JVPTracers, even under an outer grad (jax-facts §13)."""
    body = ("import jax\nfrom jax.interpreters import ad\n\ndef cubic(x):\n"
            "    assert isinstance(x, ad.JVPTracer)\n    return x ** 3\n\n")
    only_jvp = body + "def slope(x):\n    return jax.jvp(cubic, (x,), (1.0,))[1]\n"
    assert check(only_jvp, "VJP402") == []
    also_grad = only_jvp + "\ndef g(x):\n    return jax.grad(cubic)(x)\n"
    assert [d.location.row for d in check(also_grad, "VJP402")] == [5]
    unused = body
    assert [d.location.row for d in check(unused, "VJP402")] == [5]


@pytest.mark.parametrize("test, rewritten", [
    ('type(x).__name__ != "JVPTracer"', "not isinstance(x, jax.core.Tracer)"),
    ('"JVPTracer" not in repr(x)', "not isinstance(x, jax.core.Tracer)"),
])
def test_vjp402_negated_tests_are_silently_true(test, rewritten):
    source = f"import jax\n\ndef f(x):\n    return {test}\n"
    (d,) = check(source, "VJP402")
    assert d.message == f"`{test}` is silently True {SNIFF_TAIL}"
    assert apply_fix(source, d).splitlines()[3] == f"    return {rewritten}"


def test_vjp402_tuple_of_types_rewrites_only_the_jvptracer_element():
    source = ("import jax\nfrom jax.interpreters import ad, batching\n\n"
              "def f(x):\n    return isinstance(x, (ad.JVPTracer, batching.BatchTracer))\n")
    (d,) = check(source, "VJP402")
    assert (d.location.row, d.location.column) == (5, 12)
    assert apply_fix(source, d).splitlines()[4] == "    return isinstance(x, (jax.core.Tracer, batching.BatchTracer))"


def test_vjp402_silent_on_tracer_base_linearize_tracer_text_and_own_class():
    assert check('''
        """isinstance(x, JVPTracer) is what old code did; "JVPTracer" in repr(x) too."""
        import jax
        from jax._src.interpreters.ad import JVPTracer, LinearizeTracer

        def f(x):
            # isinstance(x, JVPTracer)
            a = isinstance(x, jax.core.Tracer)
            b = isinstance(x, (JVPTracer, LinearizeTracer))
            c = "JVPTracer"
            d = repr(x).startswith("GradTracer")
            return a, b, c, d
    ''', "VJP402") == []
    assert check('''
        class JVPTracer:
            pass

        def f(x):
            return isinstance(x, JVPTracer) or type(x).__name__ == "JVPTracer"
    ''', "VJP402") == []


def test_vjp402_silent_in_forward_mode_machinery_and_in_jax_itself():
    # compares the tracer's own trace: written for a JVP trace it created
    assert check('''
        import jax
        from jax.interpreters import ad

        def is_mine(x, trace):
            return isinstance(x, ad.JVPTracer) and x._trace is trace
    ''', "VJP402") == []
    # JAX's own implementation imports only jax._src
    assert check('''
        from jax._src import core
        from jax._src.interpreters import ad

        def _stop(x):
            if isinstance(x, ad.JVPTracer):
                return _stop(x.primal)
            return x
    ''', "VJP402") == []


def test_vjp402_no_fix_without_jax_imported_as_jax():
    found = check('''
        import jax as jx
        from jax.interpreters.ad import JVPTracer

        def f(x):
            return isinstance(x, JVPTracer)
    ''', "VJP402")
    assert where(found) == [("VJP402", 6, 12)]
    assert found[0].fix is None


# -- VJP201 closure-over-traced ------------------------------------------------------------------

CLOSURE = '''
import jax
import jax.numpy as jnp

def loss(c, x):
    @jax.custom_vjp
    def g(x):
        return c * jnp.sin(x)
    def g_fwd(x):
        return g(x), x
    def g_bwd(x, ct):
        return (c * jnp.cos(x) * ct,)
    g.defvjp(g_fwd, g_bwd)
    return jnp.sum(g(x))

grad_loss = jax.grad(loss)
'''


def test_vjp201_closure_over_parameter_of_traced_function():
    (d,) = check(CLOSURE, "VJP201")
    assert (d.code, d.location.row, d.location.column) == ("VJP201", 8, 16)
    assert d.message == (
        "custom_vjp `g` is defined inside `loss` and closes over `c` (read in `g`, `g_bwd`): `c` is a parameter of "
        "`loss`, which is traced by `jax.grad`. Differentiating `g` with respect to `c` fails (UnexpectedTracerError, "
        "or CustomVJPException 'Detected differentiation of a custom_vjp function with respect to a closed-over "
        "value' when the call is staged by jit/checkpoint/scan), and `jax.grad(jax.jit(...))` fails with 'No "
        "constant handler for type DynamicJaxprTracer' even when it is not differentiated. Pass `c` as an explicit "
        "argument of `g` (returning its cotangent (or None) from bwd), or hoist it with `jax.closure_convert`")


def test_vjp201_only_bwd_closes_over_a_value_computed_from_the_parameter():
    found = check('''
        import jax
        import jax.numpy as jnp

        @jax.jit
        def step(w, x):
            scale = jnp.exp(w)
            @jax.custom_jvp
            def f(x):
                return x
            @f.defjvp
            def f_jvp(primals, tangents):
                return primals[0], scale * tangents[0]
            return f(x)
    ''', "VJP201")
    assert where(found) == [("VJP201", 13, 28)]
    assert found[0].message.startswith(
        "custom_jvp `f` is defined inside `step` and closes over `scale` (read in `f_jvp`): `scale` is computed "
        "from `w` (`scale = jnp.exp(w)`); `w` is a parameter of `step`, which is traced by `jax.jit`. "
        "Differentiating `f` with respect to `w` fails (UnexpectedTracerError), and")


def test_vjp201_attribute_of_an_object_built_from_the_parameter():
    found = check('''
        import jax

        class Box:
            def __init__(self, v):
                self.v = v

        def model(s, x):
            box = Box(s)
            f = jax.custom_vjp(lambda x: box.v * x)
            f.defvjp(lambda x: (f(x), None), lambda _, g: (box.v * g,))
            return f(x)

        jax.grad(model)
    ''', "VJP201")
    assert where(found) == [("VJP201", 10, 34)]
    assert "closes over `box` (read in `f`, `bwd`): `box` is computed from `s` (`box = Box(s)`)" in \
        found[0].message


@pytest.mark.parametrize("source", [
    # the value is passed explicitly
    '''
import jax
@jax.custom_vjp
def g(c, x):
    return c * x
g.defvjp(lambda c, x: (g(c, x), (c, x)), lambda r, ct: (r[1] * ct, r[0] * ct))
@jax.jit
def loss(c, x):
    return g(c, x)
''',
    # a module-level constant and a stop_gradient result
    '''
import jax
import jax.numpy as jnp
SCALE = 2.0
@jax.jit
def loss(c, x):
    frozen = jax.lax.stop_gradient(c)
    @jax.custom_vjp
    def g(x):
        return SCALE * frozen * jnp.sin(x)
    g.defvjp(lambda x: (g(x), x), lambda x, ct: (SCALE * frozen * jnp.cos(x) * ct,))
    return g(x)
''',
    # jax.closure_convert already hoists the tracers
    '''
import jax
def solve(f, x0):
    conv, consts = jax.closure_convert(f, x0)
    @jax.custom_vjp
    def run(x0, *consts):
        return conv(x0, *consts)
    run.defvjp(lambda x0, *c: (run(x0, *c), (x0, c)), lambda r, ct: jax.vjp(conv, r[0], *r[1])[1](ct))
    return run(x0, *consts)
jax.jit(solve, static_argnums=0)
''',
    # static and callable parameters of a traced function, and a shape
    '''
import jax
import jax.numpy as jnp
from functools import partial
@partial(jax.jit, static_argnums=(0,))
def apply(n, fn, x):
    width = x.shape[0]
    @jax.custom_jvp
    def g(x):
        return fn(x) ** n / width
    g.defjvp(lambda p, t: (g(*p), n * t[0]))
    return g(x)
''',
    # a factory called at import time with Python values
    '''
import jax
def make(power: int, axis=0):
    @jax.custom_jvp
    def f(x):
        return (x ** power).sum(axis)
    f.defjvp(lambda p, t: (f(*p), (power * p[0] ** (power - 1) * t[0]).sum(axis)))
    return f
cube = make(3)
''',
])
def test_vjp201_silent_look_alikes(source):
    assert check(source, "VJP201") == []


def test_vjp201_equinox_filter_jit_keeps_non_array_parameters_static():
    source = '''
import equinox as eqx
import jax
import jax.numpy as jnp

@eqx.filter_jit
def apply(n, w, x):
    @jax.custom_jvp
    def g(x):
        return x ** n + jnp.dot(w, x)
    g.defjvp(lambda p, t: (g(*p), n * t[0]))
    return g(x)
'''
    found = check(source, "VJP201")
    assert [(d.location.row, d.message.split(":")[0]) for d in found] == [
        (10, "custom_jvp `g` is defined inside `apply` and closes over `w` (read in `g`)")]


# -- VJP202 rule-side-effect ---------------------------------------------------------------------

RULE_HEAD = '''
import jax
import jax.numpy as jnp
{outer}
@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), x

def f_bwd(x, g):
    {effect}
    return (jnp.cos(x) * g,)

f.defvjp(f_fwd, f_bwd)
'''


@pytest.mark.parametrize("outer, effect, what", [
    ("LOG = []", "LOG.append(g)", "mutates `LOG`, defined outside the rule (`LOG.append(g)`)"),
    ("SEEN = {}", "SEEN['g'] = g", "stores into `SEEN`, defined outside the rule (`SEEN['g'] = g`)"),
    ("SEEN = set()", "SEEN.add(g)", "mutates `SEEN`, defined outside the rule (`SEEN.add(g)`)"),
    ("LAST = None", "global LAST; LAST = g", "assigns the global `LAST` (`LAST = g`)"),
    ("class S: pass\nstate = S()", "state.last = g", "sets an attribute of `state`, defined outside the rule "
                                                     "(`state.last = g`)"),
])
def test_vjp202_outer_mutations_in_bwd(outer, effect, what):
    found = check(RULE_HEAD.format(outer=outer, effect=effect), "VJP202")
    assert [d.code for d in found] == ["VJP202"]
    assert found[0].message.startswith(f"the bwd rule `f_bwd` of `f` {what}: rules run only under differentiation")
    assert found[0].message.endswith("and what it stores are tracers: using them later raises UnexpectedTracerError "
                                     "('Encountered an unexpected tracer'). Return the value (as an output or in the "
                                     "residuals) or log with `jax.debug.callback`")


def test_vjp202_counter_message_does_not_claim_a_tracer():
    (d,) = check(RULE_HEAD.format(outer="N = 0", effect="global N; N += 1"), "VJP202")
    assert (d.location.row, d.location.column) == (13, 15)
    assert "so the effect does not follow the calls. Return the value" in d.message
    assert "tracers" not in d.message


@pytest.mark.parametrize("outer, effect", [
    ("", "acc = []; acc.append(g)"),  # a local list
    ("LOG = []", "jax.debug.callback(lambda v: LOG.append(v), g)"),  # runs at execution time
    ("", "g = g.at[0].add(1.0)"),  # functional array update
    ("class Opt:\n    def update(self, g): return g\nopt = Opt()", "g = opt.update(g)"),  # not a container
    ("TREEDEF = None", "global TREEDEF; TREEDEF = jax.tree_util.tree_structure(g)"),  # static metadata
    ("SHAPES = {}", "SHAPES['g'] = g.shape"),  # static metadata
])
def test_vjp202_silent_look_alikes(outer, effect):
    assert check(RULE_HEAD.format(outer=outer, effect=effect), "VJP202") == []


def test_vjp202_jvp_rule_nonlocal_and_primal_side_effects_are_not_rules():
    found = check('''
        import jax

        calls = []

        def make():
            last = None

            @jax.custom_jvp
            def f(x):
                calls.append(x)  # the primal: not a rule
                return x

            @f.defjvp
            def f_jvp(primals, tangents):
                nonlocal last
                leaves, last = jax.tree_util.tree_flatten(primals)  # the treedef is static
                last = tangents[0]
                return primals[0], tangents[0]
            return f
    ''', "VJP202")
    assert where(found) == [("VJP202", 18, 9)]
    assert found[0].message.startswith("the jvp rule `f_jvp` of `f` assigns the nonlocal `last` (`last = tangents[0]`)")


# -- VJP203 method-decorated ---------------------------------------------------------------------

def test_vjp203_decorated_method_called_through_the_instance():
    found = check('''
        import jax
        from functools import partial

        class Layer:
            @partial(jax.custom_vjp, nondiff_argnums=(0,))
            def apply(self, x):
                return x

            def __call__(self, x):
                return self.apply(x)
    ''', "VJP203")
    assert where(found) == [("VJP203", 6, 6)]
    assert found[0].message == (
        "`apply` is an instance method of `Layer` decorated with `custom_vjp`: custom_vjp objects have no "
        "`__get__`, so `self` is never passed and `self.apply(...)` at line 11 fails with TypeError 'could not be "
        "resolved to positional-only arguments ... missing a required argument'. Move it to a module-level "
        "function that takes the object explicitly (call it as `fn(self, x)`), or stack `@staticmethod` on top and "
        "drop `self`")


def test_vjp203_the_model_records_the_class():
    from vjplint.facts.collect import collect

    source = "import jax\nclass M:\n    @jax.custom_jvp\n    def f(self, x):\n        return x\n"
    model = collect(ast.parse(source), source.splitlines())
    assert [(d.name, d.class_node.name) for d in model.derivatives] == [("f", "M")]
    assert where(check(source, "VJP203")) == [("VJP203", 3, 6)]


@pytest.mark.parametrize("source", [
    # @staticmethod stacked on top
    "import jax\nclass M:\n    @staticmethod\n    @jax.custom_vjp\n    def f(x):\n        return x\n",
    # only ever called as Class.method(obj, x)
    "import jax\nclass M:\n    @jax.custom_jvp\n    def f(self, x):\n        return x\n"
    "    def g(self, x):\n        return M.f(self, x)\n",
    # no `self`: obj.f(x) passes exactly x
    "import jax\nclass M:\n    @jax.custom_vjp\n    def f(x):\n        return x\n    def g(self, x):\n"
    "        return self.f(x)\n",
    # a module-level custom function called from the method
    "import jax\n@jax.custom_vjp\ndef f(m, x):\n    return x\nclass M:\n    def g(self, x):\n"
    "        return f(self, x)\n",
])
def test_vjp203_silent_look_alikes(source):
    assert check(source, "VJP203") == []


OBJECT_HEADER = '''
from functools import partial
import equinox as eqx
import jax
import jax.numpy as jnp

class Affine:
    def __init__(self, weight, bias=0.0):
        self.weight = weight
        self.bias = bias

    def __call__(self, v):
        return jnp.tanh(self.weight * v + self.bias)

class Shifted(Affine):
    pass

class Gain(eqx.Module):
    weight: jax.Array

    def __call__(self, v):
        return self.weight * v

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def settle(x, layer):
    return layer(x)

settle.defvjp(lambda x, layer: (settle(x, layer), x), lambda layer, x, g: jax.vjp(layer, x)[1](g))

def make_layer(w):
    return Affine(w)
'''


def test_a_plain_object_holding_a_tracer_is_worded_as_the_closure_it_is():
    source = OBJECT_HEADER + '''
@jax.jit
def through_helper(w, x):
    return settle(x, make_layer(w))

@jax.jit
def inherited(w, x):
    return settle(x, Shifted(w))

@jax.jit
def pytree(w, x):
    return settle(x, Gain(w))
'''
    found = check(source, "VJP104")
    assert where(found) == [("VJP104", 35, 22), ("VJP104", 39, 22), ("VJP104", 43, 22)]
    assert found[0].message.startswith(
        "`settle` receives, in its nondiff position 1 (`layer`), an object of the plain class `Affine` (not a "
        "pytree) holding a traced value (`w` is a parameter of `through_helper`, which is traced by `jax.jit`). "
        "JAX's nondiff check sees one non-tracer object")
    assert "an object of the plain class `Shifted` (not a pytree)" in found[1].message
    assert found[2].message.startswith(  # an equinox Module is a pytree: the check sees its tracer leaf
        "`settle` receives a traced value in its nondiff position 1 (`layer`): `w` is a parameter of `pytree`, "
        "which is traced by `jax.jit`, so JAX raises UnexpectedTracerError here")
    assert check(source, "VJP105") == []  # VJP104 reports a traced value at a custom_vjp call


def test_an_untraced_object_holding_a_parameter_it_computes_with_is_a_may():
    source = OBJECT_HEADER + '''
def inherited(w, x):
    return settle(x, Shifted(bias=0.5, weight=w))

def configured(steps: int, x):
    return settle(x, Affine(1.0, steps))

def constant(x):
    return settle(x, Affine(jnp.ones(3)))
'''
    found = check(source, "VJP105")
    assert where(found) == [("VJP105", 34, 22)]
    assert found[0].message == (
        "the callable `Shifted` object `Shifted(bias=0.5, weight=w)` passed as nondiff `layer` of `settle` holds "
        "`Shifted.weight`, which comes from `w`, a parameter of `inherited` (`self.weight` = `weight` at line 9; "
        "`weight` receives `w` at line 34; `w` is a parameter of `inherited`), and `Shifted` uses it as array data "
        "(`self.weight * v`): if `inherited` is differentiated with respect to `w`, JAX may raise "
        "UnexpectedTracerError, or CustomVJPException ('Detected differentiation of a custom_vjp function with "
        "respect to a closed-over value'), or the gradient may go around the custom rule. Pass the object's arrays "
        "as differentiable arguments (an equinox Module or registered pytree can be one), or `jax.closure_convert` "
        "its call and pass the constants as arguments")
    assert found[0].severity.value == "warning"
