"""What one parameter's own code says about it being an array or a Python value: its annotation,
default, name and uses (as array data, static, called, in a Python condition), with weights and
quotable reasons; the verdict types (`Evidence`, `Verdict`, `Hints`). `vjplint.facts.infer` weighs
them with what the call sites pass (SPEC section 6).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Tuple

from vjplint.model.jaxapi import (ARRAY_NAMESPACES, ARRAY_USE_ATTRIBUTES, ARRAY_VALUE_NAMESPACES, HOST_NAMESPACES,
                                  JAX_ARRAY_ATTRIBUTES)
from vjplint.model.file_model import FileModel
from vjplint.model.semantic import FUNCTION_TYPES, FunctionNode, child_nodes, named_function, own_nodes
from vjplint.facts.kinds import ARRAY, NUMPY_SCALAR_TYPES, classify_annotation, number_literal
from vjplint.facts.values import field_use, numeric_use
from vjplint.facts.registry import query


# jnp/lax functions whose listed positions are static (shape, axis, dtype, ...).
STATIC_POSITIONS: Dict[str, FrozenSet[int]] = {
    name: frozenset(pos) for name, pos in {
        "reshape": {1}, "transpose": {1}, "sum": {1}, "mean": {1}, "max": {1}, "min": {1}, "prod": {1},
        "std": {1}, "var": {1}, "any": {1}, "all": {1}, "argmax": {1}, "argmin": {1}, "cumsum": {1},
        "cumprod": {1}, "logsumexp": {1}, "softmax": {1}, "log_softmax": {1}, "expand_dims": {1},
        "squeeze": {1}, "moveaxis": {1, 2}, "swapaxes": {1, 2}, "tile": {1}, "broadcast_to": {1},
        "zeros": {0, 1}, "ones": {0, 1}, "empty": {0, 1}, "full": {0, 2}, "eye": {0, 1, 2},
        "identity": {0, 1}, "arange": {0, 1, 2, 3}, "linspace": {2}, "tri": {0, 1, 2}, "tril": {1},
        "triu": {1}, "split": {1, 2}, "array_split": {1, 2}, "stack": {1}, "concatenate": {1},
        "flip": {1}, "rot90": {1, 2}, "pad": {1}, "einsum": {0}, "diagonal": {1, 2, 3}, "trace": {1, 2, 3},
        "astype": {1}, "zeros_like": {1}, "ones_like": {1}, "full_like": {2}, "sort": {1}, "argsort": {1},
        "broadcast_in_dim": {1, 2}, "dynamic_slice": {2}, "slice": {1, 2, 3}, "slice_in_dim": {1, 2, 3, 4},
        "reduce": {3}, "dot_general": {2}, "convert_element_type": {1}, "bitcast_convert_type": {1},
        "iota": {0, 1}, "reduce_window": {3, 4, 5, 6}, "conv_general_dilated": {2, 3, 4, 5, 6},
        "fori_loop": {0, 1}, "norm": {1, 2}, "top_k": {1}, "one_hot": {1}, "repeat": {1, 2}, "roll": {2},
        "take_along_axis": {2}, "take": {2}, "diff": {1, 2}, "gather": {2, 3}, "psum": {1}, "pmean": {1},
        "all_gather": {1}, "ppermute": {1, 2}, "cond": {0}, "switch": {0}, "while_loop": set(), "scan": set(),
        "map": set(), "psum_scatter": {1}, "pmax": {1}, "pmin": {1}, "all_to_all": {1, 2, 3}, "axis_index": {0},
        "pshuffle": {1, 2}, "pbroadcast": {1, 2}, "reduce_scatter": {1}, "full_like_static": set(),
        # parameters of the primitive itself (Python ints JAX hashes), never operands
        "reduce_precision": {1, 2}, "round": {1}, "integer_pow": {1}, "rev": {1}, "collapse": {1, 2},
        "dynamic_slice_in_dim": {2, 3}, "dynamic_index_in_dim": {2, 3}, "index_in_dim": {1, 2, 3},
        "dynamic_update_slice_in_dim": {3}, "approx_max_k": {1}, "approx_min_k": {1}, "cummax": {1},
        "cummin": {1}, "cumlogsumexp": {1}, "triu_indices": {0, 1, 2}, "tril_indices": {0, 1, 2},
        "partition": {1, 2}, "argpartition": {1, 2}, "tensordot": {2}, "vander": {1}, "broadcast": {1},
    }.items()
}

# Parameters that take static values: a nondiff argument passed here is a Python value.
STATIC_KEYWORDS = frozenset({
    "axis", "axes", "shape", "newshape", "dtype", "keepdims", "ord", "num", "ndim", "dimension",
    "dimensions", "precision", "preferred_element_type", "length", "reverse", "unroll", "mode",
    "method", "kind", "order", "total_repeat_length", "num_segments", "indices_are_sorted",
    "unique_indices", "axis_name", "k", "n", "N", "M", "size", "side", "padding", "strides",
    "window_strides", "dimension_numbers", "feature_group_count", "batch_group_count",
    "is_stable", "num_keys", "sizes", "slice_sizes", "new_sizes", "broadcast_dimensions",
    "out_sharding", "start_index", "limit_index", "stride", "norm", "bins", "full_matrices",
    "compute_uv", "lower", "symmetrize_input", "upper", "where_static", "copy", "ddof", "return_sign",
    "return_index", "return_inverse", "return_counts", "scatter_dimension", "split_axis", "concat_axis",
    "tiled", "axis_index_groups", "perm", "check_finite", "overwrite_a", "overwrite_b", "assume_a",
    "exponent_bits", "mantissa_bits", "decimals", "rounding_method", "num_classes", "kth", "recall_target",
})


STATIC_BUILTINS = frozenset({"range", "len", "isinstance", "enumerate", "int", "str", "bool", "tuple",
                             "list", "sorted", "reversed", "hasattr", "getattr", "type", "hash", "repr"})


STATIC_METHODS = frozenset({"reshape", "astype", "transpose", "sum", "mean", "max", "min", "squeeze",
                            "swapaxes", "view", "expand_dims", "repeat", "split", "argmax", "argmin",
                            "cumsum", "prod", "std", "var", "all", "any", "flatten", "ravel", "format"})


CALLABLE_NAMES = frozenset({"f", "fn", "fun", "func", "function", "callback", "cb", "body_fun", "body_fn",
                            "cond_fun", "apply_fn", "loss_fn", "objective", "step_fn", "kernel_fn", "impl",
                            "op", "operator", "matvec", "solve", "transpose_solve", "fixed_point_fun"})


STATIC_NAMES = frozenset({"axis", "axes", "n", "shape", "dtype", "num", "size", "dim", "ndim", "mode",
                          "method", "config", "cfg", "kind", "order", "static", "precision", "k",
                          "axis_name", "reduce_axes", "keepdims", "name", "options", "opts", "unroll",
                          "eps", "epsilon", "tol", "rtol", "atol", "hmax", "mxstep", "maxiter", "max_iter",
                          "max_steps", "max_num_steps", "seed"})


# NumPy functions that read only what a tracer has too (its shape, dtype): no evidence of a concrete array
HOST_SHAPE_QUERIES = frozenset({"shape", "ndim", "size", "result_type", "dtype", "iinfo", "finfo", "isscalar",
                                "issubdtype", "broadcast_shapes", "can_cast", "promote_types", "isdtype"})


# array functions that read only their first argument's shape and dtype: no derivative flows from it
SHAPE_ONLY = frozenset({"zeros_like", "ones_like", "empty_like", "full_like"})


@dataclass
class Evidence:
    """One piece of evidence about a parameter."""

    kind: str  # "array", "static" or "callable"
    weight: int
    reason: str
    line: int = 0
    from_name: bool = False  # a hint from the parameter's name only
    from_usage: bool = False  # how the primal, fwd or bwd body uses the value
    weak: bool = False  # one weak use as array data (weight 1): only several of them count
    key: bool = False  # the use is as a PRNG key
    # the use carries no derivative: "mask" (a `where`/`select` condition, a boolean), "shape" (`zeros_like(v)`)
    no_derivative: str = ""
    may: bool = False  # says the value may be an array, never that it is one (caps the verdict at "maybe")
    unfixable: str = ""  # why the residual-plus-None fix cannot move the value (a non-pytree object)
    traced_at: int = 0  # the line of a call of this module passing the slot a traced value (VJP104's call)
    via: str = ""  # the module function the value was followed into (`helper_evidence`), if any
    container: bool = False  # a display of constants (`{'scale': 0.5}`): static items, never decisive alone
    string: bool = False  # the use shows a string (compared with one, formatted into one): VJP104 reads it


@dataclass
class Verdict:
    """A parameter and the evidence about it."""

    position: int
    name: str
    evidence: List[Evidence] = field(default_factory=list)

    @property
    def array_weight(self) -> int:
        return max((e.weight for e in self.evidence if e.kind == "array" and not e.weak), default=0)

    @property
    def weak_uses(self) -> List[Evidence]:
        """Weak uses as array data, one per line."""
        seen, out = set(), []
        for e in self.evidence:
            if e.weak and e.line not in seen:
                seen.add(e.line)
                out.append(e)
        return out

    @property
    def static_weight(self) -> int:
        return max((e.weight for e in self.evidence if e.kind != "array"), default=0)

    @property
    def level(self) -> Optional[str]:
        """"array" (confident), "maybe" (strongly contradicted) or None (stay silent).

        A use as array data against a static-sounding name (`eps`, `axis_name`) stays silent:
        such hyperparameters are Python values in practice, and precision comes first."""
        array, static = self.array_weight, self.static_weight
        if array < 2 and static == 0 and len(self.weak_uses) >= 2:
            return "maybe"  # several uses as array data and nothing static: it may be traced
        if static >= 3 or array < 2:
            return None
        if array < 3 and any(e.from_name for e in self.evidence if e.kind != "array"):
            # A function-like name is a hint, never stronger than usage: `fn` used as array data is a
            # "maybe". A static-sounding name stays decisive against one use (tolerances such as
            # odeint's `rtol`/`hmax` are Python floats used with jnp: tests/realworld).
            against = [e for e in self.evidence if e.kind != "array"]
            return "maybe" if static <= 1 and all(e.from_name and e.kind == "callable" for e in against) else None
        if array >= 3:
            sure = any(e.kind == "array" and e.weight >= 2 and not (e.weak or e.may) for e in self.evidence)
            return "array" if static <= 1 and sure else "maybe"
        return {0: "array", 1: None, 2: "maybe"}[static]

    def best(self, kind: str = "array") -> Optional[Evidence]:
        matching = [e for e in self.evidence if e.kind == kind and not e.weak]
        if not matching and kind == "array" and self.weak_uses:
            uses = self.weak_uses
            listed = ", ".join(f"`{e.reason}` (line {e.line})" for e in uses[:3])
            more = f" and {len(uses) - 3} more" if len(uses) > 3 else ""
            return Evidence("array", 1, f"is used as array data in {listed}{more}", uses[0].line, weak=True)
        return max(matching, key=lambda e: e.weight) if matching else None

    def contradictions(self) -> List[Evidence]:
        return [e for e in self.evidence if e.kind != "array"]


@dataclass(frozen=True)
class Hints:
    """The settings' name hints (`array-names`, `static-names`)."""

    array_names: FrozenSet[str] = frozenset()
    static_names: FrozenSet[str] = frozenset()


@query
def annotation_evidence(model: FileModel, annotation: Optional[ast.expr], name: str) -> List[Evidence]:
    if annotation is None:
        return []
    kind = classify_annotation(model, annotation)
    if kind is None:
        return []
    return [Evidence(kind, 3, f"is annotated `{model.quote(annotation)}`", annotation.lineno)]


@query
def default_evidence(model: FileModel, default: ast.expr) -> List[Evidence]:
    if isinstance(default, ast.Lambda):
        return [Evidence("callable", 3, "defaults to a lambda", default.lineno)]
    if isinstance(default, ast.Constant) and default.value is not None and default.value is not Ellipsis:
        return [Evidence("static", 2, f"defaults to `{model.quote(default)}`", default.lineno)]
    if isinstance(default, ast.Tuple) and all(isinstance(e, ast.Constant) for e in default.elts):
        return [Evidence("static", 2, f"defaults to `{model.quote(default)}`", default.lineno)]
    if isinstance(default, ast.Call) and (model.index.qualname(default.func) or "").startswith("numpy.") and \
            (model.index.qualname(default.func) or "").rsplit(".", 1)[-1] in NUMPY_SCALAR_TYPES and \
            len(default.args) == 1 and not default.keywords and number_literal(default.args[0]):
        # `sigma=np.float64(0.1)`: a NumPy scalar made from a literal, a host constant as a literal is
        return [Evidence("static", 2, f"defaults to the NumPy scalar `{model.quote(default)}`", default.lineno)]
    if isinstance(default, ast.Call):
        q = model.index.qualname(default.func) or ""
        if q.startswith(ARRAY_VALUE_NAMESPACES):
            return [Evidence("array", 2, f"defaults to an array: `{model.quote(default)}`", default.lineno)]
    return []


@query(memo=False)
def name_evidence(name: str) -> List[Evidence]:
    lowered = name.lower()
    if lowered in CALLABLE_NAMES or lowered.endswith(("_fn", "_fun", "_func", "_callback")):
        return [Evidence("callable", 1, "is named like a function", from_name=True)]
    if lowered in STATIC_NAMES or lowered.startswith(("num_", "n_", "is_", "use_", "static_", "return_")) or \
            lowered.endswith(("_axis", "_size", "_shape", "_dim", "_dtype", "_name", "_names", "_axes", "_eps",
                              "_tol", "_mode", "_config")):
        return [Evidence("static", 1, "is named like a static value", from_name=True)]
    return []


@query
def usage_evidence(model: FileModel, fn: FunctionNode, param: str) -> List[Evidence]:
    found: List[Evidence] = []
    parents = model.index.parents
    for node in _loads_of(model, fn, param):
        evidence = _classify_use(model, node, parents, param)
        if evidence is not None:
            evidence.from_usage = True
            found.append(evidence)
    return found


@query
def helper_evidence(model: FileModel, fn: FunctionNode, param: str) -> List[Evidence]:
    """How the module's own functions that `fn` passes `param` to use it (`post_fwd(x, h_post)`,
    then `h_post.astype(...)[:, :, None]` there), two calls deep, as `usage_evidence` reads a body:
    the value is the same whichever function reads it."""
    return _helper_evidence(model, fn, param, 0, set())


def _helper_evidence(model: FileModel, fn: FunctionNode, param: str, depth: int, seen: set) -> List[Evidence]:
    found: List[Evidence] = []
    scope = model.index.scopes.get(fn)
    if depth >= 2 or fn in seen or scope is None or len(scope.bindings.get(param, [])) > 1:
        return found
    seen.add(fn)
    parents = model.index.parents
    for node in _loads_of(model, fn, param):
        parent = parents.get(node)
        keyword = parent.arg if isinstance(parent, ast.keyword) else None
        call = parents.get(parent) if isinstance(parent, ast.keyword) else parent
        if not isinstance(call, ast.Call) or call.func is node or not isinstance(call.func, ast.Name):
            continue
        callee = named_function(model.index, call.func)
        if callee is None or isinstance(callee, ast.Lambda) or callee in seen:
            continue
        params = model.signature(callee).positional
        if keyword is None:
            position = next((i for i, a in enumerate(call.args) if a is node), None)
            if position is None or position >= len(params) or \
                    any(isinstance(a, ast.Starred) for a in call.args[:position]):
                continue
            inner = params[position]
        elif keyword in params:
            inner = keyword
        else:
            continue
        via = f"is passed to `{callee.name}` (line {node.lineno}), where `{inner}` "
        for e in usage_evidence(model, callee, inner) + _helper_evidence(model, callee, inner, depth + 1, seen):
            reason = e.reason if e.via else via + e.reason  # the outermost call names the first helper
            found.append(Evidence(e.kind, e.weight, reason, node.lineno, from_usage=True, key=e.key,
                                  string=e.string, container=e.container, no_derivative=e.no_derivative,
                                  via=callee.name))
    return found


def open_parameter(model: FileModel, origin: Tuple[ast.AST, str, str]) -> bool:
    """Whether the parameter a value comes from (`vjplint.facts.kinds.Kind.origin`) may receive what a
    caller differentiates: its function is a `def` no transformation here traces (a traced one
    is a tracer already) and nothing in it uses the parameter as a Python value."""
    fn, param, _ = origin
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn in model.traced:
        return False
    return all(e.kind == "array" or (e.from_name and e.weight <= 1) for e in usage_evidence(model, fn, param))


@dataclass
class HeldParameter:
    """A field of a callable object that comes from a parameter nothing shows traced, and the
    object's own use of it as array data (`vjplint.facts.value_kinds` builds the object's fields)."""

    cls: ast.ClassDef
    field: str  # `weight`, or `params["w"]`-like paths as `params.w`
    param: str
    function: str
    chain: str
    use: ast.AST


@query
def held_parameter(model: FileModel, kind) -> Optional[HeldParameter]:
    """For an object of a class with `__call__` built in this module (`Affine(w)`): its first
    field whose value comes from an open parameter (`open_parameter`) and that a method uses as
    array data. Such an object passed in a nondiff slot, or closed over, carries that value
    past JAX's tracer check; whether it fails depends on what the parameter's callers pass."""
    cls = kind.node
    if not isinstance(cls, ast.ClassDef):
        return None
    static = {s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
              and classify_annotation(model, s.annotation) == "static"}  # `scale: float` in a dataclass
    for name, part in kind.fields:
        if name in static or (part.tag not in ("unknown", "array", "maybe") and not part.fields):
            continue
        leaf = part.origin_leaf()
        if leaf is None or not open_parameter(model, leaf[1]):
            continue
        use = field_use(model, cls, name)
        if use is not None:
            fn, param, chain = leaf[1]
            return HeldParameter(cls, name + leaf[0], param, getattr(fn, "name", "<lambda>"), chain, use)
    return None


@dataclass
class BoundParameter:
    """An argument `functools.partial` binds that comes from a parameter nothing shows traced,
    and the wrapped function's use of it as array data (`partial(cubic, k)` with `k * x`)."""

    index: int  # 1-based position among the partial's bound arguments
    target: str  # the wrapped function's parameter it fills
    param: str
    function: str
    chain: str
    use: ast.AST


@query
def bound_parameter(model: FileModel, kind) -> Optional[BoundParameter]:
    """For a callable `vjplint.facts.value_kinds` built with `functools.partial` over a `def` of this
    module: its first bound argument from an open parameter (`open_parameter`) that the wrapped
    function uses as array data. Like a closure over that parameter, the partial carries it past
    JAX's tracer check; whether it fails depends on what the parameter's callers pass."""
    fn = kind.node
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    bound = [k for n, k in kind.captures if n.startswith("argument ") and n.endswith(" of the partial")]
    if len(bound) != sum(1 for n, _ in kind.captures if n.startswith("argument ")):
        return None  # a partial of a partial: the positions shift
    args = [*fn.args.posonlyargs, *fn.args.args]
    for i, part in enumerate(bound):
        if i >= len(args) or part.origin is None or part.tag not in ("unknown", "array", "maybe"):
            continue
        if not open_parameter(model, part.origin):
            continue
        target = args[i].arg
        annotation = args[i].annotation
        if annotation is not None and classify_annotation(model, annotation) == "static":
            continue  # `k: float` in the wrapped function: the author means a Python number
        use = numeric_use(model, fn, lambda n, t=target: isinstance(n, ast.Name) and n.id == t and isinstance(
            n.ctx, ast.Load) and model.index.scope_of(n).node is fn)
        if use is not None:
            origin_fn, param, chain = part.origin
            return BoundParameter(i + 1, target, param, getattr(origin_fn, "name", "<lambda>"), chain, use)
    return None


def flow_evidence(model: FileModel, fn: FunctionNode, param: str) -> List[Evidence]:
    """What `usage_evidence` misses: uses through local aliases (`scale = 2.0 * rate`, `lo, hi =
    bounds`), and weak uses as array data, judged by the kinds `vjplint.facts.value_kinds` infers."""
    found: List[Evidence] = []
    parents = model.index.parents
    values = model.facts.values()
    for name, line in [(param, 0), *_aliases(model, fn, param)]:
        for node in _loads_of(model, fn, name):
            if name != param:
                strong = _classify_use(model, node, parents, name)
                if strong is not None:
                    strong.from_usage = True
                    strong.reason = f"{strong.reason} (as `{name}`, assigned from it at line {line})"
                    found.append(strong)
                    continue
            weak = _weak_use(model, values, node, parents)
            if weak is not None:
                found.append(weak)
    return found


def _aliases(model: FileModel, fn: FunctionNode, param: str) -> List[Tuple[str, int]]:
    """Names `fn` assigns from `param` directly: `a = param`, `a = -param`, `a = 2 * param`,
    `a = param[0]`, `a, b = param` (one level; anything else may change what the value is)."""
    out: List[Tuple[str, int]] = []
    if isinstance(fn, ast.Lambda):
        return out
    for node in model.index.of_node(_single_assignments, fn):
        value, target = node.value, node.targets[0]
        if not _derived_from(value, param):
            continue
        if isinstance(target, ast.Name) and target.id != param:
            out.append((target.id, node.lineno))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, ast.Name):
            out.extend((t.id, node.lineno) for t in target.elts if isinstance(t, ast.Name) and t.id != param)
    return out


def _single_assignments(fn: FunctionNode) -> List[ast.Assign]:
    """`fn`'s own `a = ...` statements with one target (kept per file, `model.index.of_node`:
    asked per parameter)."""
    return [node for node in own_nodes(fn)  # type: ignore[misc]
            if node.__class__ is ast.Assign and len(node.targets) == 1]  # type: ignore[attr-defined]


def _derived_from(value: ast.expr, param: str) -> bool:
    if isinstance(value, ast.Name):
        return value.id == param
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        return _derived_from(value.operand, param)
    if isinstance(value, ast.BinOp) and not isinstance(value.op, ast.MatMult):
        sides = (value.left, value.right)
        return any(_derived_from(x, param) for x in sides) and any(isinstance(x, ast.Constant) for x in sides)
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant):
        return _derived_from(value.value, param)
    return False


def _weak_use(model: FileModel, values: "object", node: ast.expr,
              parents: Dict[ast.AST, ast.AST]) -> Optional[Evidence]:
    """Arithmetic or a comparison with a known array, or an index into one: the value may be array
    data (or a Python number). Alone it proves nothing; several of them add up."""
    of = values.of  # type: ignore[attr-defined]
    used: ast.AST = node
    parent = parents.get(used)
    # `-p`, `p[0]` and `2.0 * p` carry the value on: judge what they are combined with.
    while (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd))) or (
            isinstance(parent, ast.Subscript) and parent.value is used) or (
            isinstance(parent, ast.BinOp) and not isinstance(parent.op, (ast.Pow, ast.MatMult)) and isinstance(
                parent.right if parent.left is used else parent.left, ast.Constant)):
        used, parent = parent, parents.get(parent)
    weak = None
    if isinstance(parent, ast.BinOp) and not isinstance(parent.op, ast.MatMult):
        if isinstance(parent.op, ast.Pow) and parent.right is used:
            return None  # `x ** n`: an exponent is a Python number more often than not
        other = parent.right if parent.left is used else parent.left
        if of(other).tag == ARRAY:
            weak = parent
    elif isinstance(parent, ast.Compare) and not _is_python_condition(parent, parents):
        holder = parents.get(parent)
        if isinstance(holder, ast.Call) and parent in holder.args and all(
                isinstance(x, ast.Constant) for x in (parent.left, *parent.comparators) if x is not used) and \
                (model.index.qualname(holder.func) or "").startswith(ARRAY_NAMESPACES):
            # `jnp.where(fn > 0, ...)`: the value itself is the array data tested (against a
            # threshold, `jnp.abs(x) < tol`, it is a weak use like arithmetic)
            return Evidence("array", 2, f"is compared as array data: `{model.quote(holder, 50)}`", node.lineno,
                            from_usage=True)
        others = [x for x in (parent.left, *parent.comparators) if x is not used]
        if not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in parent.ops) and \
                any(of(x).tag == ARRAY for x in others):
            weak = parent
    elif isinstance(parent, ast.Subscript) and parent.slice is used and of(parent.value).tag == ARRAY:
        weak = parent
    if weak is None:
        return None
    return Evidence("array", 1, model.quote(weak, 50), node.lineno, from_usage=True, weak=True)


_FUNCTION_SET = frozenset(FUNCTION_TYPES)


def _loads_of(model: FileModel, fn: FunctionNode, name: str) -> List[ast.Name]:
    """Loads of `name` in `fn`'s body, not inside nested scopes that rebind it, depth first."""
    return model.index.of_node(_all_loads, fn).get(name, [])


def _all_loads(fn: FunctionNode) -> Dict[str, List[ast.Name]]:
    """Every name's loads in `fn`'s body in one walk (kept per file by `_loads_of`: a nondiff parameter's
    uses are read in the primal and each rule, by usage, flow and alias evidence alike). A load
    inside a nested function or lambda whose parameters rebind the name is not the body's."""
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    loads: Dict[str, List[ast.Name]] = {}
    stack: List[Tuple[ast.AST, FrozenSet[str]]] = [(node, frozenset()) for node in body]
    pop, push = stack.pop, stack.append
    while stack:
        node, shadowed = pop()
        cls = node.__class__
        if cls is ast.Name:  # no children
            name = node.id  # type: ignore[attr-defined]
            if node.ctx.__class__ is ast.Load and name not in shadowed:  # type: ignore[attr-defined]
                found = loads.get(name)
                if found is None:
                    loads[name] = [node]  # type: ignore[list-item]
                else:
                    found.append(node)  # type: ignore[arg-type]
            continue
        if cls in _FUNCTION_SET:
            args = node.args  # type: ignore[attr-defined]
            params = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
            if params:
                shadowed = shadowed.union(params)
        for child in child_nodes(node):
            push((child, shadowed))
    return loads


def _classify_use(model: FileModel, node: ast.expr, parents: Dict[ast.AST, ast.AST],
                  param: str) -> Optional[Evidence]:
    parent = parents.get(node)
    line = node.lineno
    # `self.w` (an attribute of the argument) used as array data: the argument holds arrays.
    if isinstance(parent, ast.Attribute) and parent.value is node:
        if parent.attr in ARRAY_USE_ATTRIBUTES and not _non_array_object(model, node, param):
            return Evidence("array", 2, f"is used as an array: `{model.quote(parent)}`", line)
        grand = parents.get(parent)
        if isinstance(grand, ast.Call) and grand.func is parent:
            return None  # a method call on the object tells nothing about arrays
        inner = _classify_use(model, parent, parents, param)
        if inner is not None and inner.kind == "array":
            inner.reason = f"holds arrays: `{model.quote(parent)}` is used in `{_quote_context(model, parent, parents)}`"
            return inner
        return None
    if isinstance(parent, ast.Call):
        if parent.func is node:
            return Evidence("callable", 3, f"is called as a function: `{model.quote(parent)}`", line)
        return _call_argument_evidence(model, node, parent)
    if isinstance(parent, ast.keyword):
        call = parents.get(parent)
        if isinstance(call, ast.Call):
            return _call_argument_evidence(model, node, call, keyword=parent.arg)
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.MatMult):
        return Evidence("array", 2, f"is used as an array: `{model.quote(parent)}`", line)
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and getattr(parent, "test", None) is node:
        return Evidence("static", 2, f"is used as a Python condition: `if {model.quote(node)}:`", line)
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return Evidence("static", 2, f"is used as a Python condition: `{model.quote(parent)}`", line)
    if isinstance(parent, ast.Slice):
        return Evidence("static", 2, f"is used as a slice bound: `{model.quote(parents.get(parent) or parent)}`", line)
    if isinstance(parent, ast.Compare) and _is_python_condition(parent, parents) and not any(
            isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
        return Evidence("static", 2, f"is used in a Python condition: `{model.quote(parent)}`", line)
    if isinstance(parent, ast.Compare):
        others = [parent.left, *parent.comparators]
        if any(isinstance(o, ast.Constant) and isinstance(o.value, str) for o in others):
            return Evidence("static", 2, f"is compared with a string: `{model.quote(parent)}`", line, string=True)
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
        return Evidence("static", 2, f"is iterated over in Python: `for ... in {model.quote(node)}`", line)
    if isinstance(parent, ast.FormattedValue):
        return Evidence("static", 1, "is formatted into a string", line, string=True)
    if isinstance(parent, ast.Starred):
        return Evidence("static", 1, "is unpacked with `*`", line)
    return None


def _non_array_object(model: FileModel, node: ast.expr, param: str) -> bool:
    """The function that reads `param` at `node` also reads an attribute no `jax.Array` has
    (`model.func(x)` beside `model.shape`): the value is another object, whose `.shape` is its own."""
    if not isinstance(node, ast.Name):
        return False
    scope = model.index.scope_of(node)
    fn = scope.node if scope is not None else None
    if not isinstance(fn, FUNCTION_TYPES):
        return False
    parents = model.index.parents
    for load in _loads_of(model, fn, param):
        parent = parents.get(load)
        if isinstance(parent, ast.Attribute) and parent.value is load and parent.attr not in JAX_ARRAY_ATTRIBUTES \
                and not parent.attr.startswith("__"):
            return True
    return False


def _is_python_condition(node: ast.AST, parents: Dict[ast.AST, ast.AST]) -> bool:
    """`node` decides a Python branch (`if`, `while`, `x if c else y`, `assert`, via and/or/not)."""
    parent = parents.get(node)
    while isinstance(parent, ast.BoolOp) or (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)):
        node, parent = parent, parents.get(parent)
    return isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and getattr(parent, "test", None) is node


def _quote_context(model: FileModel, node: ast.AST, parents: Dict[ast.AST, ast.AST]) -> str:
    parent = parents.get(node)
    if isinstance(parent, ast.keyword):
        parent = parents.get(parent)
    return model.quote(parent if parent is not None else node)


def _call_argument_evidence(model: FileModel, node: ast.expr, call: ast.Call,
                            keyword: Optional[str] = None) -> Optional[Evidence]:
    line = node.lineno
    q = model.index.qualname(call.func) or ""
    func_name = q.rsplit(".", 1)[-1] if q else (call.func.attr if isinstance(call.func, ast.Attribute) else "")
    if keyword is not None and keyword in STATIC_KEYWORDS:
        return Evidence("static", 2, f"is passed as `{keyword}=`: `{model.quote(call)}`", line)
    if q.startswith("builtins.") and func_name in STATIC_BUILTINS:
        return Evidence("static", 2, f"is passed to `{func_name}()`: `{model.quote(call)}`", line)
    if q in ("builtins.max", "builtins.min") and len(call.args) >= 2 and keyword is None:
        # Python compares the values with `>`: a bool of an array raises unless it is one concrete number
        return Evidence("static", 2, f"is compared in Python by `{func_name}()`: `{model.quote(call)}`", line)
    if q.startswith(HOST_NAMESPACES):
        if q.startswith("numpy.") and func_name not in HOST_SHAPE_QUERIES and keyword is None and \
                any(a is node for a in call.args):
            # the value itself converted by NumPy (`onp.diag(mass)`): the author keeps it a concrete NumPy
            # array, as a traced one raises TracerArrayConversionError there whatever its slot
            return Evidence("static", 3, f"is converted by NumPy, so it is a concrete NumPy array (a traced value "
                                         f"raises TracerArrayConversionError there): `{model.quote(call)}`", line)
        return Evidence("static", 1, f"is passed to NumPy, which needs a concrete value: `{model.quote(call)}`", line)
    if q.startswith(ARRAY_VALUE_NAMESPACES):
        first = keyword is None and bool(call.args) and call.args[0] is node
        if q.startswith("jax.random.") and (keyword == "key" or first):
            return Evidence("array", 2, f"is used as a PRNG key: `{model.quote(call)}`", line, key=True)
        if keyword is None:
            position = next((i for i, a in enumerate(call.args) if a is node), None)
            if position is None or position in STATIC_POSITIONS.get(func_name, frozenset()):
                return Evidence("static", 2, f"is a static argument of `{func_name}`: `{model.quote(call)}`", line)
        condition = func_name in ("where", "select") and len(call.args) == 3 and call.args[0] is node
        shape_only = func_name in SHAPE_ONLY and bool(call.args) and call.args[0] is node
        return Evidence("array", 2, f"is used as an array: `{model.quote(call)}`", line,
                        no_derivative="mask" if condition else "shape" if shape_only else "")
    if not q and isinstance(call.func, ast.Attribute) and call.func.attr in STATIC_METHODS and call.func.value is not node:
        return Evidence("static", 2, f"is passed to `.{call.func.attr}()`: `{model.quote(call)}`", line)
    return None
