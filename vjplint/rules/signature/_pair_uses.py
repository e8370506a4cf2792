"""Where a bwd rule uses a parameter that holds a pair (nnx's `g = (input_updates_g, out_g)`) as one
array: VJP317's analysis (private to the signature family).

A use as an array is a use a tuple cannot take (measured on flax 0.12.8, docs/facts/jax-errors.md,
"Wrappers: routes (wrap11)"): arithmetic and unary operators, comparisons, an attribute other than
`count`/`index` (`g.astype`, `g.shape`), a subscript other than a constant pair index (`g[:, None]`,
`g[idx]`), an argument of a `jax.numpy`/`lax` function, or any of these in a function of the module
it is passed to. A read of the pair (`_, out_g = g`, `*_, out_g = g`, `for part in g`) means the
author knows it is a pair: nothing is reported then. Uses inside nested functions count unless one
of them rebinds the name.
"""

from __future__ import annotations

import ast
from typing import List, NamedTuple, Optional

from vjplint.model.file_model import FileModel
from vjplint.model.semantic import FunctionNode, named_function
from vjplint.syntax.walk import child_nodes

# Operators that fail on a tuple operand (`+` concatenates two tuples, so it is left out unless the
# other side is provably not a tuple: too rare to be worth it; `*` by an int repeats a tuple, but a
# cotangent times an int literal is rare and times an array raises).
ARITHMETIC = (ast.Mult, ast.Div, ast.Sub, ast.Pow, ast.MatMult, ast.FloorDiv, ast.Mod)
TUPLE_ATTRIBUTES = frozenset({"count", "index"})
PAIR_INDICES = frozenset({0, 1, -1, -2})
# Functions whose result has their tree argument's structure (the pair stays a pair).
TREE_MAPS = frozenset({"jax.tree.map", "jax.tree_util.tree_map", "jax.tree_map"})
ARRAY_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "numpy.")


class ArrayUse(NamedTuple):
    node: ast.AST
    error: str  # the exception, as the message quotes it
    through: str = ""  # ", which ... in `helper`" when found in a function it is passed to
    certain: bool = True  # False: handed whole to a callable the module does not define, or returned


class PairUses:
    """Finds the first use of a name as an array in a function, following the module's functions
    it is passed to `depth` calls deep."""

    def __init__(self, model: FileModel, depth: int = 2) -> None:
        self.model = model
        self.depth = depth

    def array_use(self, fn: FunctionNode, name: str) -> Optional[ArrayUse]:
        """The first use of `name` as an array in `fn`; None when `fn` reads it as a pair anywhere,
        rebinds it, or never uses it as an array."""
        found: List[ArrayUse] = []
        if not self._scan(fn.body if isinstance(fn, ast.Lambda) else fn.body, name, found):  # type: ignore[arg-type]
            return None
        certain = [u for u in found if u.certain]
        return certain[0] if certain else found[0] if found else None

    def _scan(self, body, name: str, found: List[ArrayUse]) -> bool:
        """Walk `body` (a node or statements) collecting array uses of `name`; False when `name` is read
        as a pair or rebound (the whole answer is then None)."""
        stack: List[ast.AST] = list(reversed(body)) if isinstance(body, list) else [body]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                args = node.args
                if name in {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} or \
                        (args.vararg and args.vararg.arg == name) or (args.kwarg and args.kwarg.arg == name):
                    continue  # shadowed: another value
                stack.extend(reversed(node.body if isinstance(node.body, list) else [node.body]))
                continue
            verdict = self._node(node, name, found)
            if verdict is False:
                return False
            stack.extend(reversed(child_nodes(node)))
        return True

    def _node(self, node: ast.AST, name: str, found: List[ArrayUse]) -> Optional[bool]:
        def is_name(e: Optional[ast.AST]) -> bool:
            return isinstance(e, ast.Name) and e.id == name

        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets if t is not None for n in ast.walk(t)):
                return False  # rebound
            value = getattr(node, "value", None) or getattr(node, "iter", None)
            unpacked = [t for t in targets if isinstance(t, (ast.Tuple, ast.List))] if isinstance(node, ast.Assign) else []
            if is_name(value) and unpacked and not any(isinstance(e, ast.Starred) for t in unpacked for e in t.elts) \
                    and all(len(t.elts) != 2 for t in unpacked):
                n = len(unpacked[0].elts)  # `a, b, c = g`: a primal's 3-tuple output, unpacked as JAX passes it
                found.append(ArrayUse(node, f"`ValueError: {'too many' if n < 2 else 'not enough'} values to unpack "
                                            f"(expected {n}, got 2)`"))
                return None
            if is_name(value) and not (isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in targets)):
                return False  # `a, b = g`, `for part in g`: read as a pair
            if isinstance(node, ast.Assign) and isinstance(value, ast.Call) and any(is_name(a) for a in value.args) \
                    and any(isinstance(t, (ast.Tuple, ast.List)) for t in targets) and \
                    self.model.index.qualname(value.func, self.model.index.scope_of(value)) in TREE_MAPS:
                return False  # `inputs_g, out_g = jax.tree.map(f, g)`: a tree map keeps the pair, read as one
        if isinstance(node, ast.Starred) and is_name(node.value):
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ARITHMETIC) and (is_name(node.left) or is_name(node.right)):
            found.append(ArrayUse(node, "`TypeError: unsupported operand type(s) ... 'tuple'`"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)) and is_name(node.operand):
            found.append(ArrayUse(node, "`TypeError: bad operand type for unary ...: 'tuple'`"))
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Lt, ast.Gt, ast.LtE, ast.GtE)) and (
                is_name(node.left) or any(is_name(c) for c in node.comparators)):
            found.append(ArrayUse(node, "`TypeError: '<' not supported between instances of 'tuple' and ...`"))
        elif isinstance(node, ast.Attribute) and is_name(node.value) and node.attr not in TUPLE_ATTRIBUTES:
            found.append(ArrayUse(node, f"`AttributeError: 'tuple' object has no attribute '{node.attr}'`"))
        elif isinstance(node, ast.Subscript) and is_name(node.value):
            index = node.slice
            if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and isinstance(index.operand, ast.Constant):
                index = ast.Constant(-index.operand.value)  # type: ignore[operator]
            if isinstance(index, ast.Constant) and index.value in PAIR_INDICES and type(index.value) is int:
                return None  # a read of the pair (`g[1]`); nothing follows from it alone
            found.append(ArrayUse(node, "`TypeError: tuple indices must be integers or slices` (or an "
                                        "integer-conversion error)"))
        elif isinstance(node, ast.Call):
            self._call(node, name, found)
        elif isinstance(node, ast.Return) and node.value is not None and (is_name(node.value) or (
                isinstance(node.value, (ast.Tuple, ast.List)) and any(is_name(e) for e in node.value.elts))):
            found.append(ArrayUse(node, "a pytree structure error (bwd returns the pair as a cotangent)",
                                  certain=False))
        return None

    def _call(self, call: ast.Call, name: str, found: List[ArrayUse]) -> None:
        positions = [i for i, a in enumerate(call.args) if isinstance(a, ast.Name) and a.id == name]
        if not positions or any(isinstance(a, ast.Starred) for a in call.args[:positions[0]]):
            return
        q = self.model.index.qualname(call.func, self.model.index.scope_of(call)) or ""
        if q.startswith(ARRAY_NAMESPACES):
            found.append(ArrayUse(call, "`TypeError: ... requires ndarray or scalar arguments, got <class 'tuple'>`"))
            return
        helper = named_function(self.model.index, call.func)
        if not isinstance(helper, (ast.FunctionDef, ast.Lambda)) or getattr(helper, "decorator_list", None):
            found.append(ArrayUse(call, "an error where that callable uses it as an array (a tuple is no array)",
                                  ", a callable this module does not define", certain=False))
            return
        if self.depth <= 0:
            return
        params = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
        if positions[0] >= len(params):
            return
        inner = PairUses(self.model, self.depth - 1).array_use(helper, params[positions[0]])
        if inner is not None:
            label = getattr(helper, "name", "<lambda>")
            found.append(ArrayUse(call, inner.error, f", which uses it as an array in `{label}`" if inner.certain
                                  else f", which hands it on in `{label}`", inner.certain))
