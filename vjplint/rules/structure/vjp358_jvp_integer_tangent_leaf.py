from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Set

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.model.semantic import named_function
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label

JAX_ERROR = ("`TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
             "dtypes, but got: primal int32[] with tangent int32[], expecting tangent float0[]`")
# The builders whose result has their argument's dtype: an integer argument gives an integer tangent.
LIKE = ("zeros_like", "ones_like", "full_like", "empty_like")


class JvpIntegerTangentLeaf(Rule):
    """## What it does
    Flags a leaf of a `jax.custom_jvp` rule's tangent output that is an integer or boolean array:
    built with an integer dtype (`jnp.zeros((), jnp.int32)`, `jnp.zeros_like(x, dtype=jnp.int32)`),
    or `zeros_like`/`ones_like` of a value the code shows to be an integer (`jnp.argmax`, an
    int dtype, a value the rule uses as an index, `t[i]`), wherever the leaf sits: in a tuple or
    list, a dict's value, a NamedTuple's field, a name bound to one, or the tuple a helper of the
    module returns for the rule (census row E09 in its other spellings; `VJP329` reports the
    literal pair whose primal element is shown to be an integer).

    ## Why is this bad?
    A tangent is never an integer array. An integer or boolean primal output takes a `float0`
    tangent, a float output a float tangent of its dtype, so JAX rejects the rule's output
    whichever the primal is, under `jax.jvp`, `jax.grad`, `jax.jacfwd` and `jit` of them, even when
    only the float outputs are differentiated (measured on JAX 0.10.2, `fixtures/rules/VJP358/`):

        TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding
        shapes and dtypes, but got: primal int32[] with tangent int32[], expecting tangent float0[]

    ## Example
    ```python
    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        out = f(x)
        i = out["index"]
        return out, {"value": t[i], "index": jnp.zeros_like(i)}
    ```

    ## Use instead
    ```python
        return out, {"value": t[i], "index": np.zeros(np.shape(i), dtype=jax.dtypes.float0)}
    ```

    ## Fix safety
    No fix: the float0 zero needs `numpy` and the primal leaf's shape, which the rule may not name.
    """

    CODE = "VJP358"
    NAME = "jvp-integer-tangent-leaf"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_jvp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"jvp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_jvp
def top(x):
    return {"value": jnp.max(x), "index": jnp.argmax(x)}

@top.defjvp
def top_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = top(x)
    i = out["index"]
    return out, {"value": t[i], "index": jnp.zeros_like(i)}
''']
    VALID = ['''
import jax
import jax.numpy as jnp
import numpy as np

@jax.custom_jvp
def top(x):
    return {"value": jnp.max(x), "index": jnp.argmax(x)}

@top.defjvp
def top_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = top(x)
    i = out["index"]
    return out, {"value": t[i], "index": np.zeros(np.shape(i), dtype=jax.dtypes.float0)}
''']

    def check(self) -> None:
        self._done: Set[ast.AST] = set()

    def check_derivative(self, d: CustomDerivative) -> None:
        for reg, rule in self.model.facts.jvp_rules(d):
            if reg.method != "defjvp" or rule.node is None or rule.node in self._done:
                continue
            self._done.add(rule.node)
            self._check_rule(d, rule)

    def _check_rule(self, d: CustomDerivative, rule: RuleFunction) -> None:
        assert rule.node is not None
        fn = self.model.facts.through_wrapper(rule.node)
        ints = self.model.facts.integers()
        indices = self._indices(fn)
        for _, value in self.model.facts.returns_of(fn):
            pair = self._follow(value)
            if not isinstance(pair, (ast.Tuple, ast.List)) or len(pair.elts) != 2 or \
                    any(isinstance(e, ast.Starred) for e in pair.elts):
                continue
            primal_expr, tangent_expr = pair.elts
            for leaf, path in self._leaves(tangent_expr, [], 0):
                why = self._integer(leaf, ints, indices)
                if why is None or self._shown_by_vjp329(primal_expr, tangent_expr, leaf, path, ints):
                    continue
                which = "its tangent output" if leaf is tangent_expr else "a leaf of its tangent output,"
                self.report(leaf, (
                    f"{rule_label(rule, 'jvp rule')} of custom_jvp `{d.name}` returns as {which} "
                    f"`{self.quote(leaf, 40)}`, an integer array ({why}): a tangent is never an integer array "
                    f"(an integer or boolean output takes a float0 tangent, a float output a float one), so "
                    f"`jax.jvp`/`jax.grad` of `{d.name}` raises {JAX_ERROR}; return "
                    f"`np.zeros(np.shape(...), dtype=jax.dtypes.float0)` for an integer output"))
                return

    def _shown_by_vjp329(self, primal: ast.expr, tangent: ast.expr, leaf: ast.expr, path: List[int], ints) -> bool:
        """VJP329's own case: the literal pair's tangent (or its tuple element) against a primal
        element the code shows to be an integer."""
        if leaf is not tangent and not (isinstance(tangent, (ast.Tuple, ast.List)) and len(path) == 1
                                        and leaf is tangent.elts[path[0]]):
            return False
        if ints.int_tangent(leaf) is None:
            return False
        why = ints.element(primal, path)
        return why is not None and why != "pending"

    def _integer(self, leaf: ast.expr, ints, indices: Set[str]) -> Optional[str]:
        """Why `leaf` is an integer array, or None."""
        built = ints.int_tangent(leaf)
        if built is not None:
            if built.dtype is not None:
                return f"dtype {built.dtype}"
            return f"it keeps the integer dtype of `{self.quote(built.source, 30)}`"
        e = self._follow(leaf)
        if isinstance(e, ast.Call) and e.args and isinstance(e.args[0], ast.Name) and e.args[0].id in indices \
                and not any(k.arg == "dtype" for k in e.keywords) and len(e.args) == 1:
            q = self.model.index.qualname(e.func) or ""
            if q.startswith(("jax.numpy.", "numpy.")) and q.rsplit(".", 1)[-1] in LIKE:
                return f"`{e.args[0].id}` is an integer: the rule indexes an array with it"
        return None

    def _indices(self, fn: ast.AST) -> Set[str]:
        """Names the rule uses as an array index (`t[i]`): integers."""
        found: Set[str] = set()
        for node in self.model.facts.own_nodes(fn):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name):
                found.add(node.slice.id)
        return found

    def _follow(self, e: ast.expr) -> ast.expr:
        """A name bound once to a value in its scope: that value; else `e`."""
        if isinstance(e, ast.Name):
            bindings = self.model.index.lookup(e.id, self.model.index.scope_of(e))
            if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
                return bindings[0].value
        return e

    def _leaves(self, e: ast.expr, path: List[int], depth: int) -> Iterator[tuple]:
        """(leaf, path) for each leaf of a tangent output: tuple and list elements, dict values,
        the fields of a class built positionally or by keyword (a NamedTuple), a name bound to one,
        and the tuples a helper of the module returns."""
        followed = self._follow(e)
        if depth > 3:
            return
        if isinstance(followed, (ast.Tuple, ast.List)) and not any(isinstance(x, ast.Starred) for x in followed.elts):
            for i, x in enumerate(followed.elts):
                yield from self._leaves(x, [*path, i], depth + 1)
        elif isinstance(followed, ast.Dict) and None not in followed.keys:
            for x in followed.values:
                yield from self._leaves(x, [*path, -1], depth + 1)
        elif isinstance(followed, ast.Call) and isinstance(followed.func, ast.Name) and self._is_class(followed.func):
            for x in [*followed.args, *(k.value for k in followed.keywords)]:
                yield from self._leaves(x, [*path, -1], depth + 1)
        elif isinstance(followed, ast.Call) and (helper := self._helper(followed)) is not None:
            returns = [v for _, v in self.model.facts.returns_of(helper) if v is not None]
            if returns and all(isinstance(v, (ast.Tuple, ast.List, ast.Dict)) for v in returns):
                for v in returns:
                    yield from self._leaves(v, [*path, -1], depth + 1)
            else:
                yield e, path
        else:
            yield e, path

    def _is_class(self, name: ast.Name) -> bool:
        bindings = self.model.index.lookup(name.id, self.model.index.scope_of(name))
        return len(bindings) == 1 and bindings[0].kind == "class"

    def _helper(self, call: ast.Call) -> Optional[ast.FunctionDef]:
        helper = named_function(self.model.index, call.func)
        if not isinstance(helper, ast.FunctionDef) or helper.decorator_list or self.model.derivative_for_node(helper):
            return None
        return helper
