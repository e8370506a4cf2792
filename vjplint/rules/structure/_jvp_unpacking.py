"""How a jvp rule unpacks what JAX passes it: the primal and tangent names of x, n = primals and
x_dot, _ = tangents (or (x, n), (x_dot, _) = primals, tangents), whether a name is one of the
rule's primals, whether a function reads a name, and the elements of a tuple literal (or of a
name assigned once to one). Read by VJP329."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from vjplint.model.file_model import CustomDerivative, FileModel, RuleFunction
from vjplint.model.semantic import own_nodes, walk


def is_rule_primal(primal: Optional[ast.expr], d: CustomDerivative, rule: RuleFunction) -> bool:
    unpacked = rule_unpacking(d, rule)
    return isinstance(primal, ast.Name) and unpacked is not None and primal.id in unpacked[0]


def rule_unpacking(d: CustomDerivative, rule: RuleFunction
                    ) -> Optional[Tuple[List[str], List[Optional[str]], ast.stmt]]:
    """(primal names, tangent names, the statement unpacking the tangents) from `x, n = primals`
    and `x_dot, _ = tangents` (or `(x, n), (x_dot, _) = primals, tangents`) in the rule."""
    assert rule.node is not None
    params = rule.signature.positional[rule.bound_positional:]  # type: ignore[union-attr]
    k = len(d.nondiff)
    if len(params) != k + 2:
        return None
    primals_param, tangents_param = params[k], params[k + 1]
    found: Dict[str, Tuple[List[Optional[str]], ast.stmt]] = {}
    for node in own_nodes(rule.node):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs: List[Tuple[ast.expr, ast.expr]] = [(target, value)]
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, ast.Tuple) and \
                len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts))
        for t, v in pairs:
            if isinstance(v, ast.Name) and v.id in (primals_param, tangents_param) and \
                    isinstance(t, (ast.Tuple, ast.List)) and v.id not in found:
                found[v.id] = ([e.id if isinstance(e, ast.Name) else None for e in t.elts], node)
    if primals_param not in found or tangents_param not in found:
        return None
    primal_names = [n or "" for n in found[primals_param][0]]
    tangent_names, statement = found[tangents_param]
    return primal_names, tangent_names, statement


def reads_name(fn: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in walk(fn))


def literal_elements(model: FileModel, e: ast.expr) -> Optional[List[ast.expr]]:
    """The elements of a tuple/list literal, or of a name assigned once to one."""
    if isinstance(e, ast.Name):
        bindings = model.index.lookup(e.id, model.index.scope_of(e))
        value = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
        if isinstance(value, (ast.Tuple, ast.List)):
            e = value
    if isinstance(e, (ast.Tuple, ast.List)) and not any(isinstance(x, ast.Starred) for x in e.elts):
        return list(e.elts)
    return None


# builders whose result is a float array unless a `dtype=` says otherwise (JAX's default float dtype)
_FLOAT_BUILDERS = frozenset({"jax.numpy.zeros", "jax.numpy.ones", "numpy.zeros", "numpy.ones", "jax.numpy.full",
                             "jax.numpy.empty"})
_LIKE_BUILDERS = frozenset({"jax.numpy.zeros_like", "jax.numpy.ones_like", "numpy.zeros_like", "numpy.ones_like",
                            "jax.numpy.full_like"})
_FLOAT_DTYPES = frozenset({"float", "builtins.float", "jax.numpy.float32", "jax.numpy.float64", "jax.numpy.float16",
                           "jax.numpy.bfloat16", "numpy.float32", "numpy.float64", "jax.numpy.float_"})


def float_tangent(model: FileModel, e: ast.expr) -> Optional[str]:
    """Why `e` is a float value (never float0): a float literal, `jnp.zeros(shape)` without a dtype or with a float
    one, `zeros_like(v, dtype=jnp.float32)`; None when the code does not show it."""
    if isinstance(e, ast.Constant) and isinstance(e.value, float):
        return "a float literal"
    if not isinstance(e, ast.Call):
        return None
    q = model.index.qualname(e.func) or ""
    dtype = next((k.value for k in e.keywords if k.arg == "dtype"), None)
    if q in _FLOAT_BUILDERS and dtype is None and len(e.args) == (2 if q == "jax.numpy.full" else 1) and not (
            q == "jax.numpy.full" and not (isinstance(e.args[1], ast.Constant) and isinstance(e.args[1].value, float))):
        return f"`{q.rsplit('.', 1)[-1]}` without a dtype makes a float array"
    if (q in _FLOAT_BUILDERS or q in _LIKE_BUILDERS) and dtype is not None and \
            (model.index.qualname(dtype) or "") in _FLOAT_DTYPES:
        return "its `dtype=` is a float dtype"
    return None
