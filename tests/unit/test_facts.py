"""The facts layer: derived facts are computed once per file, typed, and quote source exactly."""

from __future__ import annotations

import ast
import textwrap

from vjplint.facts.collect import collect
from vjplint.lint.engine import lint_source
from vjplint.syntax.positions import source_lines
from vjplint.syntax.source import parse

NON_ASCII_QUOTE = textwrap.dedent('''
    from functools import partial
    import jax
    import jax.numpy as jnp

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def scale(w, x):
        return w * x

    def scale_fwd(w, x):
        return w * x, None

    def scale_bwd(w, _, g):
        label = "größe"; out = jnp.dot(w, g)  # π
        return (out,)

    scale.defvjp(scale_fwd, scale_bwd)
''')


def test_message_quotes_are_exact_on_non_ascii_lines():
    # `ast` columns are UTF-8 bytes; "größe" is two bytes longer than it is characters.
    found = [(d.code, d.message) for d in lint_source("t.py", NON_ASCII_QUOTE).diagnostics]
    assert found == [(
        "VJP101",
        "`w` (position 0) is in nondiff_argnums but is used as an array: `jnp.dot(w, g)`; a traced value here "
        "raises UnexpectedTracerError under jit, vmap or grad. Pass it as a regular argument, save it in the "
        "residuals and return None for it from bwd",
    )]


def model_of(source: str):
    text = textwrap.dedent(source)
    return collect(parse(text), source_lines(text))


def test_quote_and_source_text_count_code_points():
    model = model_of('s = "é€"; y = f(s, "ü")\n')
    call = next(n for n in ast.walk(model.module) if isinstance(n, ast.Call))
    assert model.quote(call) == 'f(s, "ü")'
    assert model.source_text(call.args[0], call.args[1]) == 's, "ü"'
    assert model.text_between(call.args[0], call.args[1]) == ", "


MEMO_SOURCE = '''
import jax

@jax.custom_vjp
def f(x, y):
    return x * y

def f_fwd(x, y):
    def helper():
        return 1
    return x * y, (x, y)

def f_bwd(res, g):
    x, y = res
    return (g * y, g * x)

f.defvjp(f_fwd, f_bwd)
'''


def test_facts_are_memoised_per_file_and_typed():
    model = model_of(MEMO_SOURCE)
    facts = model.facts
    assert model.facts is facts
    (d,) = model.derivatives
    (rules,) = facts.checked_vjp_rules(d)
    assert (rules.fwd.name, rules.bwd.name) == ("f_fwd", "f_bwd")
    arity = facts.rule_arity(rules.bwd)
    assert (arity.required, arity.maximum, arity.names) == (2, 2, ("res", "g"))
    assert facts.rule_arity(rules.bwd) is arity
    assert facts.differentiable_names(d) == ("x", "y")
    assert facts.primal_arg_counts(d) == frozenset({2})
    returns = facts.returns_of(rules.fwd.node)
    assert facts.returns_of(rules.fwd.node) is returns
    assert [model.quote(r.value) for r in returns] == ["x * y, (x, y)"]  # not the nested `return 1`
    assert not hasattr(model, "cache")


def test_own_nodes_stop_at_nested_scopes():
    model = model_of(MEMO_SOURCE)
    fwd = next(n for n in ast.walk(model.module) if isinstance(n, ast.FunctionDef) and n.name == "f_fwd")
    own = model.facts.own_nodes(fwd)
    helper = fwd.body[0]
    assert helper in own  # the nested def itself runs here (it is a binding)...
    assert helper.body[0] not in own  # ...its body does not


def test_resolve_follows_nonlocal_past_the_declaring_scope():
    model = model_of('''
        def outer():
            n = 0
            def inner():
                nonlocal n
                n = n + 1
            return inner
    ''')
    index = model.index
    load = next(n for n in ast.walk(model.module) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                and n.id == "n")
    scope, bindings = index.resolve("n", index.scope_of(load))
    assert scope.node.name == "outer"
    assert [b.kind for b in bindings] == ["assign"]
    assert index.lookup("n", index.scope_of(load)) == bindings


def test_no_rule_module_imports_another_rule_module():
    from pathlib import Path

    import vjplint.rules as package

    paths = sorted(Path(package.__file__).parent.rglob("vjp*.py"))
    assert len(paths) >= 60
    for path in paths:
        tree = ast.parse(path.read_text())
        imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
        imported += [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
        own_family = f"vjplint.rules.{path.parent.name}."
        # shared: rules.base and rules.helpers; a family's own wording modules (not rules) are its own
        offending = [m for m in imported if m.startswith("vjplint.rules.") and m not in ("vjplint.rules.base", "vjplint.rules.helpers")
                     and not (m.startswith(own_family) and not m.rpartition(".")[2].startswith("vjp"))]
        assert not offending, f"{path.name} imports {offending}"


def test_a_model_and_its_facts_are_freed_without_the_cycle_collector():
    import gc
    import weakref

    from vjplint.plans.safety import residual_fix_offer
    from vjplint.facts.infer import Hints

    model = model_of(NON_ASCII_QUOTE)
    (d,) = model.derivatives
    assert model.facts.checked_vjp_rules(d) and model.facts.differentiable_names(d) == ("x",)
    assert [v.level for v in model.facts.verdicts(d, Hints())] == ["array"]
    assert residual_fix_offer(model, d, (0,), True)[0] is not None  # a plan is kept in the facts
    module = weakref.ref(model.module)
    gc.disable()
    try:
        del model, d
        assert module() is None  # freed by reference counting: no model <-> facts cycle
    finally:
        gc.enable()


def test_a_memo_keys_by_the_objects_and_keeps_them_alive():
    import ast
    import weakref

    from vjplint.facts import Memo

    class Thing:
        pass

    table: "Memo[int]" = Memo()
    first = Thing()
    alive = weakref.ref(first)
    assert table((first,), lambda: 1) == 1
    assert table((first,), lambda: 3) == 1  # computed once
    del first
    assert alive() is not None  # the key keeps its object: a new one never reads its entry
    assert table((Thing(),), lambda: 2) == 2
    # AST nodes hash by identity: two equal-looking nodes are two keys
    a, b = ast.parse("x").body[0], ast.parse("x").body[0]
    assert table((a,), lambda: 4) == 4 and table((b,), lambda: 5) == 5
    assert table((a,), lambda: 6, extra="other") == 6 and table((a,), lambda: 7) == 4