"""Values the code shows to have an integer or boolean dtype, and tangents built as such arrays.

JAX gives an integer or boolean primal a `float0` tangent; an integer array in its place is
rejected (docs/facts/scripts/int_tangent_float0.py). `Integers.evidence(expr)` says why `expr`
is an integer or boolean value (a quotable chain), or None when nothing in the module shows it:
an int dtype named in `astype`/`dtype=`/`jnp.int32(...)`, `argmax`/`argmin`/`searchsorted`/
`argsort`, `arange` of int literals, `lax.iota` with an int dtype, `jax.random.randint`, an integer
literal, a comparison, a parameter annotated `int`/`Int[...]`/`Bool[...]`, arithmetic of those,
names assigned only such values (a loop counter `n = n + 1` included), and the elements that a
function of the module returns. `Integers.int_tangent(expr)` says why `expr` builds an integer
array: `zeros_like`/`ones_like`/`full_like`/`empty_like` of such a value (without a float
`dtype=`), or `jnp.zeros(shape, jnp.int32)` and the like. Read it through `model.facts.integers()`.
"""

from __future__ import annotations

import ast
from typing import Dict, List, NamedTuple, Optional, Set, Tuple

from vjplint.model.file_model import CustomDerivative, FileModel
from vjplint.model.semantic import FUNCTION_TYPES, FunctionNode
from vjplint.facts.kinds import unpack_path
from vjplint.facts.registry import query

INT_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_", "bool",
                        "int_", "uint"})
_DTYPE_PREFIXES = ("jax.numpy.", "numpy.", "jax.dtypes.")
# Functions whose result is an integer (or boolean) array whatever their inputs.
INT_RESULTS = frozenset({"argmax", "argmin", "searchsorted", "argsort", "argwhere", "flatnonzero", "digitize",
                         "count_nonzero", "bincount", "isnan", "isinf", "isfinite", "isclose", "logical_and",
                         "logical_or", "logical_not", "logical_xor", "equal", "not_equal", "greater", "less",
                         "greater_equal", "less_equal", "signbit", "lexsort", "argpartition"})
_INDEX_RESULTS = frozenset({"argmax", "argmin", "searchsorted", "argsort", "argwhere", "flatnonzero", "digitize",
                            "count_nonzero", "bincount", "lexsort", "argpartition"})
_INT_RANDOM = frozenset({"randint", "permutation", "categorical", "choice", "poisson", "binomial"})
# Functions (and methods) that keep the dtype of their first argument.
SAME_DTYPE = frozenset({"asarray", "array", "reshape", "squeeze", "ravel", "expand_dims", "broadcast_to", "abs",
                        "negative", "sum", "cumsum", "max", "min", "amax", "amin", "transpose",
                        "stop_gradient", "atleast_1d", "flip", "roll", "sort", "copy", "flatten"})
# Array builders taking a shape and a dtype (the dtype's position when given positionally).
SHAPE_BUILDERS = {"zeros": 1, "ones": 1, "empty": 1, "full": 2}
LIKE_BUILDERS = {"zeros_like": 1, "ones_like": 1, "empty_like": 1, "full_like": 2}
_ARRAY_MODULES = ("jax.numpy.", "numpy.", "jax.lax.")
_CALLBACKS = frozenset({"jax.pure_callback", "jax.experimental.io_callback", "jax.experimental.pure_callback"})
PENDING = "pending"  # a name read while its own bindings are being evaluated (`n = n + 1`)
CALLER = "\x00"  # marks evidence from a call of a custom_jvp, which may never be differentiated


@query(memo=False)
def from_caller(why: str) -> bool:
    """Whether the evidence rests on a call passing an integer (a rule then says "may")."""
    return CALLER in why


@query(memo=False)
def shown(why: str) -> str:
    """The evidence as a message quotes it."""
    return why.replace(CALLER, "")


class IntArray(NamedTuple):
    """An array built with an integer dtype: the builder call, and either the dtype it names or
    the value whose dtype it keeps (`zeros_like(n)`), with why that value is an integer."""

    call: ast.Call
    dtype: Optional[str]
    source: Optional[ast.expr]
    why: str  # a name read while its own bindings are being evaluated (`n = n + 1`)


class Integers:
    """Integer evidence for one module's expressions, computed on demand and kept."""

    MAX_DEPTH = 10

    def __init__(self, model: FileModel) -> None:
        self.model = model
        self._names: Dict[Tuple[ast.AST, str], Optional[str]] = {}
        self._active: Set[Tuple[ast.AST, str]] = set()
        self._depth = 0
        self._jvp_of: Optional[Dict[ast.AST, List[CustomDerivative]]] = None  # primal -> its custom_jvps, in order

    # -- dtypes -------------------------------------------------------------------------------
    def int_dtype(self, e: Optional[ast.expr]) -> Optional[str]:
        """The integer or boolean dtype `e` names (`jnp.int32`, `"int32"`, `int`, `bool`), if any."""
        if e is None:
            return None
        if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value in INT_DTYPES:
            return e.value
        q = self.model.index.qualname(e) or ""
        if q in ("builtins.int", "builtins.bool"):
            return q[len("builtins."):]
        if q.startswith(_DTYPE_PREFIXES) and q.rsplit(".", 1)[-1] in INT_DTYPES:
            return q.rsplit(".", 1)[-1]
        return None

    def _dtype_argument(self, call: ast.Call, position: Optional[int]) -> Tuple[bool, Optional[ast.expr]]:
        """(given, expr): whether `call` names a dtype (keyword, or the argument at `position`)."""
        for k in call.keywords:
            if k.arg == "dtype":
                return True, k.value
        if position is not None and len(call.args) > position:
            return True, call.args[position]
        return False, None

    # -- values -------------------------------------------------------------------------------
    def evidence(self, e: ast.expr) -> Optional[str]:
        """Why `e` is an integer or boolean value; None when the module does not show it."""
        found = self._of(e)
        return None if found == PENDING else found

    def _of(self, e: ast.expr) -> Optional[str]:
        if self._depth > self.MAX_DEPTH:
            return None
        self._depth += 1
        try:
            return self._eval(e)
        finally:
            self._depth -= 1

    def _eval(self, e: ast.expr) -> Optional[str]:
        m = self.model
        quoted = f"`{m.quote(e, 50)}`"
        if isinstance(e, ast.Constant):
            return f"{quoted}, an integer literal" if isinstance(e.value, int) else None  # bool is an int too
        if isinstance(e, ast.Name):
            return self._name(e)
        if isinstance(e, ast.Compare):
            return f"{quoted}, a comparison (bool)"
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.op, ast.Not):
                return f"{quoted}, a bool"
            return self._of(e.operand) if isinstance(e.op, (ast.USub, ast.UAdd, ast.Invert)) else None
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, (ast.Div, ast.Pow, ast.MatMult)):
                return None  # `/` gives a float; `**` a float for a negative exponent
            sides = [self._of(e.left), self._of(e.right)]
            if any(s is None for s in sides):
                return None
            real = [s for s in sides if s != PENDING]
            return real[0] if real else PENDING
        if isinstance(e, ast.IfExp):
            arms = [self._of(e.body), self._of(e.orelse)]
            if any(a is None for a in arms):
                return None
            real = [a for a in arms if a != PENDING]
            return real[0] if real else PENDING
        if isinstance(e, ast.Subscript):
            base = self._of(e.value)  # an element or slice of an integer array is one
            if base not in (None, PENDING):
                return base
            if isinstance(e.value, ast.Attribute) and e.value.attr == "shape":
                return f"{quoted}, a size"
            return None
        if isinstance(e, ast.Attribute):
            if e.attr in ("size", "ndim") and m.facts.values().of(e.value).tag == "array":
                return f"{quoted}, a count"
            if e.attr in ("T", "real", "mT"):
                base = self._of(e.value)
                return base if base not in (None, PENDING) else None
            return None
        if isinstance(e, ast.Call):
            return self._call(e, quoted)
        return None

    def _call(self, e: ast.Call, quoted: str) -> Optional[str]:
        m = self.model
        q = m.index.qualname(e.func) or ""
        tail = q.rsplit(".", 1)[-1]
        if q in ("builtins.int", "builtins.len", "builtins.bool", "builtins.round") and (
                q != "builtins.round" or len(e.args) == 1):
            return f"{quoted}, a Python int"
        if isinstance(e.func, ast.Attribute) and not q:
            if e.func.attr == "astype" and e.args:
                dtype = self.int_dtype(e.args[0])
                return f"{quoted}, a cast to {dtype}" if dtype else None
            if e.func.attr in SAME_DTYPE or e.func.attr in ("argmax", "argmin", "argsort", "nonzero"):
                if e.func.attr in ("argmax", "argmin", "argsort"):
                    return f"{quoted}, an index array"
                base = self._of(e.func.value)
                return base if base not in (None, PENDING) else None
            return None
        if q.startswith(_DTYPE_PREFIXES) and tail in INT_DTYPES:
            return f"{quoted}, {_article(tail)} {tail}"  # `jnp.int32(0)`
        if q in _CALLBACKS and len(e.args) >= 2 and isinstance(e.args[1], ast.Call) and \
                m.index.qualname(e.args[1].func) == "jax.ShapeDtypeStruct":
            struct = e.args[1]  # `jax.pure_callback(f, jax.ShapeDtypeStruct(shape, jnp.int32), ...)`
            target = next((k.value for k in struct.keywords if k.arg == "dtype"),
                          struct.args[1] if len(struct.args) > 1 else None)
            dtype = self.int_dtype(target)
            return f"{quoted}, a host callback declared to return {dtype}" if dtype else None
        if not q.startswith(("jax.numpy.", "numpy.", "jax.lax.", "jax.random.")):
            return self._returned(e)
        if tail == "convert_element_type" and q.startswith("jax.lax."):  # `lax.convert_element_type(g, jnp.int32)`
            target = next((k.value for k in e.keywords if k.arg == "new_dtype"), e.args[1] if len(e.args) > 1 else None)
            dtype = self.int_dtype(target)
            return f"{quoted}, a conversion to {dtype}" if dtype else None
        given, dtype_expr = self._dtype_argument(e, 0 if q == "jax.lax.iota" else 1 if tail in ("asarray", "array")
                                                 else SHAPE_BUILDERS.get(tail, LIKE_BUILDERS.get(tail)))
        if given:
            dtype = self.int_dtype(dtype_expr)
            return f"{quoted}, of dtype {dtype}" if dtype else None
        if q.startswith("jax.random."):
            return f"{quoted}, an integer draw" if tail in _INT_RANDOM else None
        if tail in INT_RESULTS:
            return f"{quoted}, {'an integer' if tail in _INDEX_RESULTS else 'a boolean'} array"
        if tail == "arange" and e.args and all(self._literal_int(a) for a in e.args):
            return f"{quoted}, a range of int literals"
        if tail in SAME_DTYPE or tail in LIKE_BUILDERS and tail != "full_like" or tail == "where" and len(e.args) == 3:
            args = e.args[1:] if tail == "where" else e.args[:1]
            found = [self._of(a) for a in args]
            if found and all(f is not None for f in found) and any(f != PENDING for f in found):
                return next(f for f in found if f != PENDING)
        return None

    def primal_output(self, d: CustomDerivative) -> Optional[str]:
        """Why every value the primal of `d` returns is an integer or boolean array (its cotangent is
        float0, a symbolic zero, so a gradient never runs bwd: docs/facts/scripts/int_output_bwd.py),
        from the primal's own body; None when a return is not shown to be one."""
        if d.primal is None:
            return None
        returns = self.model.facts.returns_of(d.primal)
        found = [self.evidence(value) if value is not None else None for _, value in returns]
        if not found or any(f is None or CALLER in f for f in found):
            return None
        return found[0]

    @staticmethod
    def _literal_int(e: ast.expr) -> bool:
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            e = e.operand
        return isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool)

    def _name(self, e: ast.Name) -> Optional[str]:
        index = self.model.index
        found = index.resolve(e.id, index.scope_of(e))
        if found is None:
            return None
        owner, bindings = found
        key = (owner.node, e.id)
        if key in self._names:
            return self._names[key]
        if key in self._active:
            return PENDING
        self._active.add(key)
        try:
            kinds = [self._binding(e.id, b.kind, b.node, b.value) for b in bindings]
        finally:
            self._active.discard(key)
        if not kinds or any(k is None for k in kinds):
            result = None
        else:
            real = [k for k in kinds if k != PENDING]
            result = real[0] if real else None
        if not self._active:  # a value found while another name was pending may rest on it
            self._names[key] = result
        return result

    def _binding(self, name: str, kind: str, node: ast.AST, value: Optional[ast.expr]) -> Optional[str]:
        m = self.model
        if kind == "param":
            annotation = getattr(node, "annotation", None)
            if annotation is None:
                owner = m.index.scope_of(node).node
                return self._primal_param(owner, name) if isinstance(owner, FUNCTION_TYPES) else None
            base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
            q = m.index.qualname(base) or ""
            tail = q.rsplit(".", 1)[-1] if q else (base.id if isinstance(base, ast.Name) else "")
            if tail in ("int", "bool", "Int", "Bool", "Integer", "UInt", "Int32", "Int64", "UInt32", "UInt8", "Int8"):
                return f"parameter `{name}` is annotated `{m.quote(annotation, 30)}`"
            return None
        if kind != "assign":
            return None
        if isinstance(node, ast.AugAssign):
            if isinstance(node.op, (ast.Div, ast.Pow, ast.MatMult)):
                return None
            inner = self._of(node.value)
            return PENDING if inner is not None else None  # `n += 1` keeps what the other bindings show
        if value is not None:
            inner = self._of(value)
            if inner in (None, PENDING):
                return inner
            return inner if inner.startswith(f"`{name}` = ") else f"`{name}` = {inner}"
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            path = unpack_path(node.targets[0], name)
            if path is None:
                return None
            inner = self.element(node.value, path)
            if inner in (None, PENDING):
                return inner
            return f"`{name}` (line {node.lineno}) is {inner}"
        return None

    def element(self, e: ast.expr, path: List[int], depth: int = 0) -> Optional[str]:
        """Why the element at `path` of the tuple `e` (a literal, a name bound to one, or a call of
        a function of the module returning tuples) is an integer value."""
        if not path:
            return self._of(e)
        if depth > 4:
            return None
        head, rest = path[0], path[1:]
        if isinstance(e, (ast.Tuple, ast.List)):
            if any(isinstance(x, ast.Starred) for x in e.elts) or not -len(e.elts) <= head < len(e.elts):
                return None
            return self.element(e.elts[head], rest, depth + 1)
        if isinstance(e, ast.Name):
            bindings = self.model.index.lookup(e.id, self.model.index.scope_of(e))
            if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
                return self.element(bindings[0].value, path, depth + 1)
            if len(bindings) == 1 and bindings[0].kind == "param" and len(path) == 1:
                return self.rule_primal(e, path[0])
            return None
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
            fn = self._function(e.func)
            if fn is None:
                return None
            key = (fn, f"return{path}")
            if key in self._active:
                return PENDING
            self._active.add(key)
            try:
                values = [r.value for r in self.model.facts.returns_of(fn)]
                if not values or any(v is None for v in values):
                    return None
                found = [self.element(v, path, depth + 1) for v in values]  # type: ignore[arg-type]
            finally:
                self._active.discard(key)
            if any(f is None for f in found):
                return None
            real = [f for f in found if f != PENDING]
            if not real:
                return None
            where = ", ".join(str(i) for i in path)
            return f"element {where} of `{self.model.quote(e, 40)}`, whose return holds {real[0]}"
        return None

    def rule_primal(self, primals: ast.Name, k: int) -> Optional[str]:
        """Why primal `k` of a custom_jvp rule's `primals` parameter is an integer: the primal's
        parameter there is annotated `int`, or a call of the custom_jvp in the module passes an
        integer there (then a "may": that call may not be differentiated)."""
        fn = self.model.index.enclosing_function(primals)
        if fn is None:
            return None
        for d in self.model.derivatives:
            if d.api != "jax" or d.kind != "jvp" or d.primal is None or d.nondiff_unresolved:
                continue
            if not any(rule.node is fn for _, rule in self.model.facts.jvp_rules(d)):
                continue
            sig = d.signature
            rule = next(rule for _, rule in self.model.facts.jvp_rules(d) if rule.node is fn)
            params = self.model.signature(fn).positional[rule.bound_positional:]
            if sig is None or sig.vararg or len(params) != len(d.nondiff) + 2 or params[len(d.nondiff)] != primals.id:
                return None
            diff = [i for i in range(len(sig.positional)) if i not in d.nondiff]
            if not 0 <= k < len(diff):
                return None
            position = diff[k]
            name = sig.positional[position]
            arg = next((a for a in [*d.primal.args.posonlyargs, *d.primal.args.args] if a.arg == name), None)
            found = self._binding(name, "param", arg, None) if arg is not None else None
            return f"primal {k} of `{d.name}`: {found}" if found is not None else None
        return None

    def _primal_param(self, fn: ast.AST, name: str) -> Optional[str]:
        """Why the parameter `name` of a custom_jvp's primal `fn` is an integer: a call of the
        custom_jvp in the module (outside its own primal and rules) passes one there."""
        if self._jvp_of is None:  # asked per parameter: a table, not a pass over every derivative
            self._jvp_of = {}
            for d in self.model.derivatives:
                if d.api == "jax" and d.kind == "jvp" and d.primal is not None and not d.nondiff_unresolved:
                    self._jvp_of.setdefault(d.primal, []).append(d)
        for d in self._jvp_of.get(fn, ()):
            sig = d.signature
            if sig is None or name not in sig.positional:
                return None
            position = sig.positional.index(name)
            rules = [rule.node for _, rule in self.model.facts.jvp_rules(d) if rule.node is not None]
            for call in self.model.facts.name_calls():
                if call.func.id != d.name or any(  # type: ignore[attr-defined]
                        self.model.index.inside(call, r) for r in [fn, *rules]):
                    continue
                derivative = self.model.facts.derivative_named(call.func)
                if derivative is not d or position >= len(call.args) or any(
                        isinstance(a, ast.Starred) for a in call.args[:position + 1]):
                    continue
                found = self._of(call.args[position])
                if found not in (None, PENDING):
                    return f"{CALLER}`{name}`, which receives {found}, at line {call.lineno}"
            return None
        return None

    def _returned(self, e: ast.Call) -> Optional[str]:
        """A call of a function of the module whose every return is an integer value."""
        fn = self._function(e.func) if isinstance(e.func, ast.Name) else None
        if fn is None:
            return None
        key = (fn, "return")
        if key in self._active:
            return PENDING
        self._active.add(key)
        try:
            values = [r.value for r in self.model.facts.returns_of(fn)]
            if not values or any(v is None for v in values):
                return None
            kinds = [self._of(v) for v in values]  # type: ignore[arg-type]
        finally:
            self._active.discard(key)
        if any(k is None for k in kinds):
            return None
        real = [k for k in kinds if k != PENDING]
        return f"`{self.model.quote(e, 40)}`, whose return is {real[0]}" if real else None

    def _function(self, name: ast.Name) -> Optional[FunctionNode]:
        """The def of the module `name` refers to (a custom_jvp's decorated primal included)."""
        bindings = self.model.index.lookup(name.id, self.model.index.scope_of(name))
        if len(bindings) == 1 and bindings[0].kind == "def" and isinstance(bindings[0].node, FUNCTION_TYPES):
            return bindings[0].node  # type: ignore[return-value]
        return None

    # -- tangents -----------------------------------------------------------------------------
    def int_tangent(self, e: ast.expr, depth: int = 0) -> Optional[IntArray]:
        """How `e` builds an integer array to serve as a tangent: `zeros_like(n)` of an integer
        `n` (its dtype kept), `jnp.zeros(shape, jnp.int32)` (named); a name assigned once to one."""
        if isinstance(e, ast.Name) and depth < 3:
            bindings = self.model.index.lookup(e.id, self.model.index.scope_of(e))
            if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
                return self.int_tangent(bindings[0].value, depth + 1)
            return None
        if not isinstance(e, ast.Call):
            return None
        q = self.model.index.qualname(e.func) or ""
        if not q.startswith(_ARRAY_MODULES):
            return None
        tail = q.rsplit(".", 1)[-1]
        if tail in LIKE_BUILDERS and e.args:
            given, dtype_expr = self._dtype_argument(e, LIKE_BUILDERS[tail])
            kept = self._dtype_of(e, dtype_expr) if given else None
            if kept is not None:
                return kept
            if given:
                dtype = self.int_dtype(dtype_expr)
                return IntArray(e, dtype, None, "") if dtype else None
            if tail == "full_like" and q.startswith("jax.lax."):
                return None
            why = self.evidence(e.args[0])
            return IntArray(e, None, e.args[0], why) if why else None
        if tail in SHAPE_BUILDERS and q.startswith(("jax.numpy.", "numpy.")):
            given, dtype_expr = self._dtype_argument(e, SHAPE_BUILDERS[tail])
            kept = self._dtype_of(e, dtype_expr) if given else None
            if kept is not None:
                return kept
            dtype = self.int_dtype(dtype_expr) if given else None
            return IntArray(e, dtype, None, "") if dtype else None
        return None

    def _dtype_of(self, e: ast.Call, dtype_expr: Optional[ast.expr]) -> Optional[IntArray]:
        """`dtype=i.dtype` (`jnp.zeros(i.shape, i.dtype)`): the dtype of a value shown to be an integer."""
        if not (isinstance(dtype_expr, ast.Attribute) and dtype_expr.attr == "dtype"):
            return None
        why = self.evidence(dtype_expr.value)
        return IntArray(e, None, dtype_expr.value, why) if why else None


def _article(dtype: str) -> str:
    return "an" if dtype.startswith(("int", "uint")) else "a"
