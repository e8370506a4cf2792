"""One way to the facts (CONTRIBUTING.md, "How a rule reads the facts"): a rule module reaches a
fact only as `model.facts.<query>(...)`; what it imports from `vjplint.facts` is data (classes it
reads, constants, type aliases) or one of the few wording helpers; it builds no analysis object
itself, reads the semantic index only through its name-resolution primitives, and never imports
another rule module or another family's private analysis. The registered queries
(`vjplint/facts/registry.py`) are memoised per file by (query, arguments)."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path
from typing import List, Optional

import pytest

from tests.conftest import ROOT
from vjplint.facts import Facts, registry
from vjplint.facts.collect import collect

RULES = ROOT / "vjplint" / "rules"
# Shared rule code that is no rule and no facts: the base class and the registry.
NOT_RULE_CODE = {"base.py", "registry.py", "docs.py"}
# Functions of the facts a rule may still import: they word a fact's value for a message
# (`plural(2, "argument")`, a structure's or a traced value's description), they find nothing.
WORDING = {"plural", "describe", "describe_traced"}
# The semantic index's name resolution and node tables, read as the model (vjplint/model/semantic.py):
# what a rule derives from them that another rule could read is a fact, a query.
INDEX_READS = {"qualname", "scope_of", "parent", "lookup", "resolve", "inside", "enclosing_function", "ancestors",
               "scopes", "of_type", "nodes", "module_scope"}
# What a rule may import from vjplint.model.semantic: its types and its primitives over the index
# (a module's constant, the function a name is bound to, a node's children); `own_nodes` is the
# fact `model.facts.own_nodes(fn)`, kept per function.
SEMANTIC_NAMES = {"FunctionNode", "FUNCTION_TYPES", "Scope", "Binding", "SemanticIndex", "constant_value",
                  "named_function", "child_nodes", "walk"}


def _family_and_kind(path: Path):
    """(family or None, 'private' for a family's `_*.py` analysis, else 'rule')."""
    rel = path.relative_to(RULES).parts
    family = rel[0] if len(rel) > 1 else None
    return family, "private" if path.name.startswith("_") and path.name != "__init__.py" else "rule"


def violations(text: str, family: Optional[str], private: bool = False) -> List[str]:
    """What in the module `text` of rule family `family` reaches the facts another way."""
    tree = ast.parse(text)
    found: List[str] = []
    facts_names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("vjplint.facts") or alias.name.startswith("vjplint.rules."):
                    found.append(f"line {node.lineno}: imports the module {alias.name}")
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        module = node.module
        parts = module.split(".")
        if module.startswith("vjplint.rules.") and len(parts) >= 4:
            other_family, name = parts[2], parts[3]
            if name.startswith("vjp"):
                found.append(f"line {node.lineno}: imports the rule module {module}")
            elif name.startswith("_") and other_family != family:
                found.append(f"line {node.lineno}: imports {module}, the private analysis of another family")
        if module == "vjplint.model.semantic":
            for alias in node.names:
                if alias.name not in SEMANTIC_NAMES:
                    found.append(f"line {node.lineno}: imports {alias.name} from vjplint.model.semantic")
        if module == "vjplint.facts" or module.startswith("vjplint.facts."):
            mod = importlib.import_module(module)
            for alias in node.names:
                value = getattr(mod, alias.name, None)
                if value is None or inspect.ismodule(value):
                    found.append(f"line {node.lineno}: imports the facts module {module}.{alias.name}")
                elif inspect.isfunction(value) and alias.name not in WORDING:
                    found.append(f"line {node.lineno}: imports the facts function {alias.name} from {module} "
                                 f"(ask model.facts.{alias.name}(...))")
                elif inspect.isclass(value):
                    facts_names[alias.asname or alias.name] = value
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in facts_names and _analysis(facts_names[func.id]):
                found.append(f"line {node.lineno}: builds the analysis {func.id} (ask model.facts for it)")
            elif node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "self" and \
                    isinstance(func, ast.Name) and func.id.lstrip("_")[:1].isupper():
                found.append(f"line {node.lineno}: builds {func.id} with the rule itself (pass the model)")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            owner = node.value
            if owner.attr == "index" and _is_model(owner.value) and node.attr not in INDEX_READS:
                found.append(f"line {node.lineno}: reads model.index.{node.attr}")
        if isinstance(node, ast.Attribute) and node.attr == "semantic" and _is_model(node.value):
            found.append(f"line {node.lineno}: reads model.semantic")
        if isinstance(node, ast.Attribute) and node.attr == "options" and isinstance(node.value, ast.Name) \
                and node.value.id == "self":
            parent_reads = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.value is node]
            found.extend(f"line {n.lineno}: reads self.options.{n.attr}" for n in parent_reads if n.attr != "relint")
    if private:  # a family's analysis is facts code of its own: only what it imports is checked
        found = [f for f in found if "rule module" in f or "another family" in f]
    return found


def _analysis(cls: type) -> bool:
    """A class of the facts built over the model (or a rule): an analysis, asked for as a query."""
    try:
        params = list(inspect.signature(cls.__init__).parameters)
    except (TypeError, ValueError):
        return False
    return len(params) > 1 and params[1] in ("model", "rule")


def _is_model(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "model" or \
        isinstance(node, ast.Attribute) and node.attr == "model"


def _rule_modules():
    return sorted(p for p in RULES.rglob("*.py") if p.name not in NOT_RULE_CODE and "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", _rule_modules(), ids=lambda p: str(p.relative_to(RULES)))
def test_a_rule_reaches_the_facts_only_through_model_facts(path: Path) -> None:
    family, kind = _family_and_kind(path)
    assert violations(path.read_text(encoding="utf-8"), family, private=kind == "private") == []


@pytest.mark.parametrize("snippet, family, expected", [
    ("from vjplint.facts.structure import registered_here\n\ndef f(self, d):\n    return registered_here(self.model, d)\n",
     "structure", ["line 1: imports the facts function registered_here from vjplint.facts.structure "
                   "(ask model.facts.registered_here(...))"]),
    ("from vjplint.facts import pullbacks\n", "signature", ["line 1: imports the facts module vjplint.facts.pullbacks"]),
    ("import vjplint.facts.contract\n", "order", ["line 1: imports the module vjplint.facts.contract"]),
    ("from vjplint.facts.linearity import Linearity\n\ndef f(self, fn):\n    return Linearity(self.model, fn, 't')\n",
     "linearity", ["line 4: builds the analysis Linearity (ask model.facts for it)"]),
    ("class _Flow:\n    pass\n\ndef f(self, fn):\n    return _Flow(self, fn)\n", "linearity",
     ["line 5: builds _Flow with the rule itself (pass the model)"]),
    ("def f(self, fn):\n    return self.model.index.of_node(len, fn)\n", "tracing", ["line 2: reads model.index.of_node"]),
    ("def f(self):\n    return self.model.semantic\n", "tracing", ["line 2: reads model.semantic"]),
    ("def f(self, d):\n    return self.options.hints\n", "nondiff", ["line 2: reads self.options.hints"]),
    ("from vjplint.model.semantic import own_nodes\n", "structure",
     ["line 1: imports own_nodes from vjplint.model.semantic"]),
    ("from vjplint.rules.structure.vjp333_jvp_tangent_structure import JvpTangentStructure\n", "structure",
     ["line 1: imports the rule module vjplint.rules.structure.vjp333_jvp_tangent_structure"]),
    ("from vjplint.rules.tracing._closures import Closures\n", "nondiff",
     ["line 1: imports vjplint.rules.tracing._closures, the private analysis of another family"]),
    # what stays allowed: data, wording, the family's own analysis, the index's name resolution, queries
    ("from vjplint.facts.contract import NONE, Struct\nfrom vjplint.facts import plural\n"
     "from vjplint.rules.tracing._closures import Closures\n\n"
     "def f(self, d, fn):\n    q = self.model.index.qualname(fn)\n    return self.model.facts.registered_here(d), "
     "Closures(self.model), plural(2, 'x'), Struct(NONE, 1, q)\n", "tracing", []),
])
def test_the_check_finds_each_other_way(snippet: str, family: str, expected: List[str]) -> None:
    assert violations(snippet, family) == expected


def test_the_rule_modules_were_read() -> None:
    paths = _rule_modules()
    assert len([p for p in paths if p.name.startswith("vjp")]) >= 60
    private = sorted(str(p.relative_to(RULES)) for p in paths if _family_and_kind(p)[1] == "private")
    assert "tracing/_closures.py" in private and "nondiff/_concrete.py" in private


# -- the registry -----------------------------------------------------------------------------------

def test_every_module_with_a_query_is_listed_and_no_query_shadows_a_fact_method() -> None:
    facts_dir = ROOT / "vjplint" / "facts"
    with_queries = sorted(f"vjplint.facts.{p.stem}" for p in facts_dir.glob("*.py")
                          if "@query" in p.read_text(encoding="utf-8") and p.stem != "registry")
    assert with_queries == sorted(registry.QUERY_MODULES)
    for module in registry.QUERY_MODULES:
        importlib.import_module(module)
    assert len(registry.QUERIES) >= 60
    shadowed = [name for name in registry.QUERIES if name in vars(Facts)]
    assert shadowed == []


def _model(source: str):
    text = textwrap.dedent(source)
    return collect(ast.parse(text), text.splitlines(True))


def test_a_query_is_computed_once_per_model_and_arguments() -> None:
    calls = []

    def count(model, node, word="x"):
        calls.append((node, word))
        return [node, word]

    registry.QUERIES["test_count_calls_of"] = registry.Query("test_count_calls_of", count, True)
    try:
        model = _model("x = 1\ny = 2\n")
        a, b = model.module.body
        first = model.facts.test_count_calls_of(a)
        assert model.facts.test_count_calls_of(a) is first  # the answer is kept
        model.facts.test_count_calls_of(b)
        model.facts.test_count_calls_of(a, word="y")  # keywords are part of the question
        model.facts.test_count_calls_of(a, word="y")
        model.facts.test_count_calls_of([a])  # does not hash: computed each time
        model.facts.test_count_calls_of([a])
        assert calls == [(a, "x"), (b, "x"), (a, "y"), ([a], "x"), ([a], "x")]
        other = _model("x = 1\n")
        other.facts.test_count_calls_of(other.module.body[0])
        assert len(calls) == 6  # another file's model has its own answers
    finally:
        registry.QUERIES.pop("test_count_calls_of", None)


def test_a_recursive_query_gets_its_on_cycle_answer_and_generators_are_not_kept() -> None:
    def depth(model, node):
        return 1 + (model.facts.test_depth(node) or 0)

    def items(model):
        yield from (1, 2)

    registry.QUERIES["test_depth"] = registry.Query("test_depth", depth, True, True, None)
    registry.query(items, name="test_items")
    try:
        model = _model("x = 1\n")
        assert model.facts.test_depth(model.module) == 1  # the inner ask got None, not a recursion error
        assert list(model.facts.test_items()) == [1, 2]
        assert list(model.facts.test_items()) == [1, 2]  # a fresh iterator, not the consumed one
    finally:
        registry.QUERIES.pop("test_depth", None)
        registry.QUERIES.pop("test_items", None)


def test_an_unknown_name_is_an_attribute_error_and_a_name_registered_twice_is_refused() -> None:
    model = _model("x = 1\n")
    with pytest.raises(AttributeError, match="no fact or query named 'no_such_fact'"):
        model.facts.no_such_fact
    from vjplint.facts.structure import registered_here

    def registered_here_again(model, d, node):
        return False

    with pytest.raises(ValueError, match="query 'registered_here' is registered twice: vjplint.facts.structure and "):
        registry.query(registered_here_again, name="registered_here")
    assert registry.QUERIES["registered_here"].function is registered_here


def test_what_the_run_contributes_is_given_at_collection_and_cannot_be_set_later() -> None:
    from vjplint.facts.infer import Hints
    from vjplint.model.run_facts import RunFacts

    hints = Hints(frozenset({"mask"}))
    text = "def f(mask):\n    return mask\n"
    model = collect(ast.parse(text), text.splitlines(True), run=RunFacts(rows=(("use", "f", "other.py:3"),)),
                    hints=hints)
    assert model.facts.hints is hints
    assert model.facts.external is not None and model.facts.external.uses == {"f": ["other.py:3"]}
    with pytest.raises(AttributeError):
        model.facts.hints = None  # type: ignore[misc]
    with pytest.raises(AttributeError):
        model.facts.external = None  # type: ignore[misc]
    plain = collect(ast.parse(text), text.splitlines(True))
    assert plain.facts.hints is None and plain.facts.external is None


def test_calls_pass_reads_each_call_by_position_keyword_and_star() -> None:
    """`calls_pass(d, position)`: what the module's calls of a custom function give one parameter
    (VJP344's "an option no call passes", VJP347's "a call passes an integer")."""
    model = _model('''
        import jax
        from functools import partial

        @jax.custom_vjp
        def f(x, n, eps=1e-5, k=2):
            return x * n

        def uses(x, xs, kw):
            a = f(x, 3)
            b = f(x, n=4, eps=0.1)
            c = f(x, *xs)
            return a, b, c, f(x, 5, **kw)
        ''')
    (d,) = model.derivatives
    calls = {node.lineno: node for node in ast.walk(model.module) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id == "f"}
    x = model.facts.calls_pass(d, 0)
    assert [a.id for a in x.arguments] == ["x", "x", "x", "x"] and not x.hidden and x.calls == 4
    n = model.facts.calls_pass(d, 1)
    assert [ast.unparse(a) for a in n.arguments] == ["3", "4", "5"] and n.hidden  # `*xs` may pass it
    assert model.facts.calls_pass(d, 1) is n  # kept per (derivative, position)
    eps = model.facts.calls_pass(d, 2)
    assert [ast.unparse(a) for a in eps.arguments] == ["0.1"] and eps.hidden and eps.any
    assert eps.arguments[0] is calls[11].keywords[1].value
    none = _model('''
        import jax

        @jax.custom_vjp
        def g(x, eps=1e-5):
            return x

        def uses(x):
            return g(x), g(x=x)
        ''')
    (g,) = none.derivatives
    passed = none.facts.calls_pass(g, 1)
    assert passed.arguments == () and not passed.hidden and not passed.any and passed.calls == 2


def test_partial_sites_are_the_arguments_a_partial_binds() -> None:
    """`partial_sites(d)`: each `functools.partial(f, ...)` of the custom function as a call site of
    what it binds, in the function that makes it (VJP105 follows a lambda bound there)."""
    model = _model('''
        import functools
        import jax

        @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
        def apply(fn, x):
            return fn(x)

        def loss(theta, x):
            op = functools.partial(apply, lambda y: theta * y)
            other = functools.partial(print, apply)
            return op(x), functools.partial(apply, fn=abs)(x)
        ''')
    (d,) = model.derivatives
    sites = model.facts.partial_sites(d)
    loss = next(n for n in ast.walk(model.module) if isinstance(n, ast.FunctionDef) and n.name == "loss")
    assert [s.enclosing for s in sites] == [loss, loss] and d.call_sites == []
    assert isinstance(sites[0].call.args[0], ast.Lambda) and sites[0].call.lineno == 10  # the partial's line
    assert sites[1].call.args == [] and [k.arg for k in sites[1].call.keywords] == ["fn"]
    assert model.facts.argument_at(sites[0].call, 0, "fn") is sites[0].call.args[0]
