"""Is this nondiff argument an array? Evidence with weights and quotable reasons (SPEC section 6).

Weights: 3 = decisive (annotation, config hint, called as a function, a callable at a call
site, a transformation that traces the position); 2 = strong (use as array data, `.shape`, a
static use such as `axis=n`, a literal or an inferred array at a call site); 1 = a hint (the
name) or a weak use (arithmetic with a value `vjplint.facts.value_kinds` knows is an array, indexing an
array). One weak use never convicts (`x ** n`, `x * scale` with a Python `scale` are correct
code); several, with no static evidence at all, make a "maybe": JAX's rule is that
nondiff_argnums is for values that cannot be tracers.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Tuple

from vjplint.model.jaxapi import ARRAY_ARGUMENT_NAMESPACES, ARRAY_NAMESPACES, ARRAY_USE_ATTRIBUTES, ARRAY_VALUE_NAMESPACES, FUNCTION_NAMESPACES, HOST_NAMESPACES, PARTIAL
from vjplint.model.file_model import CustomDerivative, FileModel, RuleFunction
from vjplint.model.semantic import FUNCTION_TYPES, FunctionNode, child_nodes, constant_value, own_nodes
from vjplint.facts.callsites import leaves_default, static_default
from vjplint.facts.crossmodule import ExternalArg, ExternalCall, external_calls
from vjplint.facts.nondiff_output import output_reasons
from vjplint.facts.value_kinds import ARRAY, CALLABLE, KEY_FUNCTIONS, STATIC_TAGS, classify_annotation
from vjplint.facts.nnx_nodes import graph_node
from vjplint.facts.value_kinds import CALLABLE as _CALLABLE
from vjplint.facts.values import field_use, numeric_use
from vjplint.syntax.walk import walk
from vjplint.facts.registry import query

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
})
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
    }.items()
}
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


@dataclass
class Evidence:
    kind: str  # "array", "static" or "callable"
    weight: int
    reason: str
    line: int = 0
    from_name: bool = False  # a hint from the parameter's name only
    from_usage: bool = False  # how the primal, fwd or bwd body uses the value
    weak: bool = False  # one weak use as array data (weight 1): only several of them count
    key: bool = False  # the use is as a PRNG key
    may: bool = False  # says the value may be an array, never that it is one (caps the verdict at "maybe")
    unfixable: str = ""  # why the residual-plus-None fix cannot move the value (a non-pytree object)
    traced_at: int = 0  # the line of a call of this module passing the slot a traced value (VJP104's call)
    container: bool = False  # a display of constants (`{'scale': 0.5}`): static items, never decisive alone


@dataclass
class Verdict:
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
    array_names: FrozenSet[str] = frozenset()
    static_names: FrozenSet[str] = frozenset()


def infer_nondiff(model: FileModel, d: CustomDerivative, hints: Hints = Hints()) -> List[Verdict]:
    """One verdict per resolved nondiff position of `d` (read them memoised: `model.facts.verdicts`)."""
    sig = d.signature
    if sig is None:
        return []
    fwd, bwd = d.rule("fwd"), d.rule("bwd")
    jvp = d.rule("jvp")
    verdicts = []
    for order, (position, name) in enumerate(d.nondiff_names()):
        v = Verdict(position, name)
        if name in hints.array_names:
            v.evidence.append(Evidence("array", 3, "is listed in `array-names`"))
        if name in hints.static_names:
            v.evidence.append(Evidence("static", 3, "is listed in `static-names`"))
        v.evidence.extend(annotation_evidence(model, sig.annotations.get(name), name))
        if name in sig.defaults:
            v.evidence.extend(default_evidence(model, sig.defaults[name]))
        v.evidence.extend(name_evidence(name))
        bodies: List[Tuple[FunctionNode, str]] = [(d.primal, name)] if d.primal is not None else []
        for rule, index in ((fwd, position), (bwd, order), (jvp, order)):
            param = _param_at(rule, index)
            if param is not None and rule is not None and rule.node is not None:
                bodies.append((rule.node, param))
                rule_sig = rule.signature
                if rule_sig is not None:
                    v.evidence.extend(annotation_evidence(model, rule_sig.annotations.get(param), param))
        for body, param in bodies:
            v.evidence.extend(usage_evidence(model, body, param))
            v.evidence.extend(flow_evidence(model, body, param))
        v.evidence.extend(_call_site_evidence(model, d, position, name, order))
        v.evidence.extend(Evidence("array", 3, reason, line, may=True) for reason, line in
                          output_reasons(model, d, position, name))
        if d.kind == "vjp":
            v.evidence.extend(_traced_factor_evidence(model, d, v, position, name))
        for call, static_position in static_boundaries(model, d):
            if static_position == position:
                v.evidence.append(Evidence("static", 2, f"is marked static in `{model.quote(call, 50)}` at line "
                                                        f"{call.lineno}", call.lineno))
        if d.kind == "jvp":  # for custom_vjp, VJP104 reports the transformation itself
            for call, traced_position, verb in traced_boundaries(model, d):
                # custom_jvp batches nondiff arguments (JAX's test_nondiff_arg_vmap_tracer); jit and
                # cond stage them and leak the tracer (jax-ml/jax#23065, #9374).
                if traced_position == position and verb != "batches it":
                    v.evidence.append(Evidence("array", 3, f"is traced: `{model.quote(call, 50)}` at line "
                                                           f"{call.lineno} {verb}", call.lineno))
        verdicts.append(v)
    return verdicts


def _param_at(rule: Optional[RuleFunction], index: int) -> Optional[str]:
    if rule is None or rule.node is None:
        return None
    params = rule.effective_positional()
    if params is None or index >= len(params):
        return None
    return params[index]


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


def open_parameter(model: FileModel, origin: Tuple[ast.AST, str, str]) -> bool:
    """Whether the parameter a value comes from (`vjplint.facts.value_kinds.Kind.origin`) may receive what a
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


@query
def traced_boundaries(model: FileModel, d: CustomDerivative) -> List[Tuple[ast.Call, int, str]]:
    """(transformation call, nondiff position, what it does there) where `d` itself is handed to a
    transformation that traces that position: `jax.jit(d)` without marking it static, `vmap`
    batching it, `grad` differentiating it, `lax.cond(p, d, ...)` whose operands are traced."""
    found: List[Tuple[ast.Call, int, str]] = []
    nondiff = [p for p, _ in d.nondiff_names()]
    if not nondiff:
        return found
    for call, q in model.facts.transforms_given(d):
        traced = _traced_positions(model, q, call, d)
        if traced is None:
            continue
        for position in nondiff:
            if position in traced:
                found.append((call, position, traced[position]))
    return found


def static_boundaries(model: FileModel, d: CustomDerivative) -> List[Tuple[ast.Call, int]]:
    """(transformation call, nondiff position) where `d` is handed to `jax.jit`/`vmap`/... with the
    position marked static (`static_argnums`, `in_axes=None`): the author passes Python values."""
    found: List[Tuple[ast.Call, int]] = []
    sig = d.signature
    if sig is None:
        return found
    for call, q in model.facts.transforms_given(d, first_only=True):
        if q not in ("jax.jit", "jax.vmap", "jax.pmap", "jax.checkpoint", "jax.remat"):
            continue
        traced = _traced_positions(model, q, call, d)
        if traced is not None:
            found.extend((call, p) for p, _ in d.nondiff_names() if p not in traced)
    return found


def _traced_positions(model: FileModel, q: str, call: ast.Call, d: CustomDerivative) -> Optional[Dict[int, str]]:
    sig = d.signature
    if sig is None:
        return None
    n = len(sig.positional)
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    tail = q.rsplit(".", 1)[-1]
    if q in ("jax.jit", "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint"):
        nums = constant_value(model.index, keywords["static_argnums"]) if "static_argnums" in keywords else ()
        names = constant_value(model.index, keywords["static_argnames"]) if "static_argnames" in keywords else ()
        if nums is None or names is None:
            return None
        nums = (nums,) if isinstance(nums, int) else nums
        names = (names,) if isinstance(names, str) else names
        static = {p % n for p in nums if isinstance(p, int) and -n <= p < n} | \
            {sig.positional.index(x) for x in names if x in sig.positional}
        return {p: "does not mark it static" for p in range(n) if p not in static}
    if q in ("jax.vmap", "jax.pmap"):
        axes = keywords.get("in_axes", call.args[1] if len(call.args) > 1 else None)
        value = 0 if axes is None else constant_value(model.index, axes)
        if isinstance(axes, (ast.Tuple, ast.List)) and all(isinstance(a, ast.Constant) for a in axes.elts):
            value = tuple(a.value for a in axes.elts)  # type: ignore[attr-defined]  # None entries too
        if isinstance(value, int) and not isinstance(value, bool):
            return {p: "batches it" for p in range(n)}
        if isinstance(value, (tuple, list)) and len(value) == n:
            return {p: "batches it" for p, a in enumerate(value) if a is not None}
        return None
    if tail in ("grad", "value_and_grad", "jacrev", "jacfwd", "hessian") and q.startswith("jax."):
        spec = keywords.get("argnums", call.args[1] if len(call.args) > 1 else None)
        value = 0 if spec is None else constant_value(model.index, spec)
        value = (value,) if isinstance(value, int) else value
        if not isinstance(value, (tuple, list)):
            return None
        return {p % n: "differentiates it" for p in value if isinstance(p, int) and -n <= p < n}
    if q in ("jax.lax.cond", "jax.lax.switch"):
        return {p: "passes it a traced operand" for p in range(n)}
    if q in ("jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.map"):
        return {p: "calls it with traced values" for p in range(n)}
    return None


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
        if parent.attr in ARRAY_USE_ATTRIBUTES:
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
            return Evidence("static", 2, f"is compared with a string: `{model.quote(parent)}`", line)
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
        return Evidence("static", 2, f"is iterated over in Python: `for ... in {model.quote(node)}`", line)
    if isinstance(parent, ast.FormattedValue):
        return Evidence("static", 1, "is formatted into a string", line)
    if isinstance(parent, ast.Starred):
        return Evidence("static", 1, "is unpacked with `*`", line)
    return None


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
        return Evidence("static", 1, f"is passed to NumPy, which needs a concrete value: `{model.quote(call)}`", line)
    if q.startswith(ARRAY_VALUE_NAMESPACES):
        first = keyword is None and bool(call.args) and call.args[0] is node
        if q.startswith("jax.random.") and (keyword == "key" or first):
            return Evidence("array", 2, f"is used as a PRNG key: `{model.quote(call)}`", line, key=True)
        if keyword is None:
            position = next((i for i, a in enumerate(call.args) if a is node), None)
            if position is None or position in STATIC_POSITIONS.get(func_name, frozenset()):
                return Evidence("static", 2, f"is a static argument of `{func_name}`: `{model.quote(call)}`", line)
        return Evidence("array", 2, f"is used as an array: `{model.quote(call)}`", line)
    if not q and isinstance(call.func, ast.Attribute) and call.func.attr in STATIC_METHODS and call.func.value is not node:
        return Evidence("static", 2, f"is passed to `.{call.func.attr}()`: `{model.quote(call)}`", line)
    return None


def _call_site_evidence(model: FileModel, d: CustomDerivative, position: int, name: str,
                        order: int = -1) -> List[Evidence]:
    found: List[Evidence] = []
    unknown = 0
    # fwd (or the jvp rule) calling the primal passes its own parameter on: that says nothing.
    own = {d.primal, *(r.node for r in (d.rule("fwd"), d.rule("bwd"), d.rule("jvp")) if r is not None)}
    # For a custom_jvp (VJP106), a call that passes the slot's own value on (the primal or the jvp
    # rule calling the primal with the parameter it received there) and a call that leaves a static
    # default count as static only when every other call passes a static value too.
    jvp = d.kind == "jvp"
    passed_on = _slot_parameters(d, position, name, order) if jvp else {}
    sig = d.signature
    default = static_default(model, sig, name) if jvp and sig is not None else None
    defaults: List[Evidence] = []
    for site in d.call_sites:
        arg = argument_at(site.call, position, name)
        if jvp and arg is None and default is not None and leaves_default(site.call, position, name):
            defaults.append(Evidence("static", 2, f"is left at its default `{model.quote(default)}` at line "
                                                  f"{site.call.lineno}", site.call.lineno))
            continue
        if jvp and isinstance(arg, ast.Name) and site.enclosing is not None and \
                site.enclosing in passed_on and _from_slot(model, arg, passed_on[site.enclosing]):
            continue
        if site.enclosing in own:
            evidence = _call_site_argument(model, arg, site.enclosing) if (
                arg := argument_at(site.call, position, name)) is not None else None
            if evidence is not None:
                found.append(evidence)
            else:
                unknown += 1
            continue
        arg = argument_at(site.call, position, name)
        if arg is None:
            unknown += 1
            continue
        evidence = _call_site_argument(model, arg, site.enclosing) or _call_site_kind(model, arg) or \
            _record_evidence(model, d, arg, position, name)
        if evidence is not None:
            found.append(evidence)
        else:
            unknown += 1
    for call in model.facts.partials_of(d):  # `partial(f, 2.0)`: the bound arguments are call-site values
        arg = partial_argument(call, position, name)
        if arg is None:
            continue  # supplied by whoever calls the partial
        enclosing = model.index.enclosing_function(call)
        evidence = _call_site_argument(model, arg, enclosing) or _call_site_kind(model, arg)
        if evidence is not None:
            evidence.reason = f"{evidence.reason} (bound by `{model.quote(call, 50)}`)"
            found.append(evidence)
        else:
            unknown += 1
    for call in external_calls(model, d.name, d.anchor):  # callers in other modules of the run
        passed = call.arg(position, name)
        if jvp and passed is None and default is not None and call.complete:
            defaults.append(Evidence("static", 2, f"is left at its default `{model.quote(default)}` at {call.where}"))
            continue
        evidence = _external_evidence(d, passed, call) if passed is not None else None
        if evidence is not None:
            found.append(evidence)
        else:
            unknown += 1
    # Every call in the module (and the run) passes a Python value: the author uses the slot statically.
    if (found or defaults) and not unknown and all(e.kind != "array" for e in found):
        found.extend(defaults)
        for e in found:
            e.weight = 2 if e.container else 3
    return found


def _from_slot(model: FileModel, arg: ast.Name, param: str, depth: int = 0) -> bool:
    """`arg` holds the value of the parameter `param` (the slot's own, in the primal or a rule) or
    one computed from it and constants alone (`tol = max(tol_param, 1e-30)`, `2 * tol_param`):
    passing it on to the primal says nothing the slot's other evidence does not."""
    bindings = model.index.lookup(arg.id, model.index.scope_of(arg))
    if arg.id == param:
        return bool(bindings) and all(b.kind == "param" for b in bindings)
    if depth > 2 or len(bindings) != 1 or bindings[0].kind != "assign" or bindings[0].value is None or \
            not isinstance(bindings[0].node, ast.Assign) or not isinstance(bindings[0].node.targets[0], ast.Name):
        return False
    value = bindings[0].value
    names = [n for n in walk(value) if isinstance(n, ast.Name)]
    calls = [n for n in walk(value) if isinstance(n, ast.Call)]
    if any((model.index.qualname(c.func) or "") not in ("builtins.max", "builtins.min", "builtins.abs", "builtins.float")
           or c.keywords for c in calls):
        return False
    leaves = [n for n in names if not any(c.func is n for c in calls)]
    allowed = (ast.Name, ast.Constant, ast.Call, ast.BinOp, ast.UnaryOp, ast.Load, ast.operator, ast.unaryop)
    return bool(leaves) and all(isinstance(n, allowed) for n in walk(value)) and \
        all(_from_slot(model, n, param, depth + 1) for n in leaves)


def _traced_factor_evidence(model: FileModel, d: CustomDerivative, v: Verdict, position: int,
                            name: str) -> List[Evidence]:
    """A value the rules use only as a factor or in a comparison (`g * scale`, `x > thresh`: weak
    uses, one is enough here) that a caller of this module passes traced (what VJP104 reports at
    the call): it is an array as soon as that caller is traced, so the slot "may" hold one (the
    evidence is capped at VJP102's level, and carries the call's line: that call raises today, so
    the fix that moves the value is safe, `traced_at`). Not when anything
    else, the name aside, says how the value is used or what it is; nor when several weak uses
    make the "maybe" already (its message lists them)."""
    if len(v.weak_uses) != 1 or any(not e.weak and not e.from_name for e in v.evidence):
        return []

    values = model.facts.values()
    for site in d.call_sites:
        if site.enclosing is None:
            continue
        traced = model.traced.get(site.enclosing)
        arg = argument_at(site.call, position, name)
        if traced is None or arg is None:
            continue
        kind = values.of(arg)
        if kind.tag in (_CALLABLE, "record"):
            continue
        reason = model.facts.traced_reason(arg, site.enclosing, traced)
        if reason is None:
            continue
        use = v.weak_uses[0]
        return [Evidence("array", 3, f"is used as a factor or in a comparison (`{use.reason}`, line {use.line}) and "
                                     f"receives a traced value at line {arg.lineno} ({reason})", arg.lineno,
                         may=True, traced_at=arg.lineno)]
    return []


def _slot_parameters(d: CustomDerivative, position: int, name: str, order: int) -> Dict[ast.AST, str]:
    """For the primal and each rule of `d`: (id of the function, its parameter holding the value
    of nondiff slot `position`), whose calls of the primal passing it on pass the same value."""
    found: Dict[ast.AST, str] = {d.primal: name} if d.primal is not None else {}
    for rule, index in ((d.rule("fwd"), position), (d.rule("bwd"), order), (d.rule("jvp"), order)):
        param = _param_at(rule, index) if index >= 0 else None
        if rule is not None and rule.node is not None and param is not None:
            found[rule.node] = param
    return found


def _array_leaf(kind, depth: int = 0) -> Optional[Tuple[str, object]]:
    """(where, kind) of the first field or element of a record holding an array."""
    if depth > 4:
        return None
    for where, part in [(f".{n}", k) for n, k in kind.fields] + [(f"[{i}]", k) for i, k in
                                                                  enumerate(kind.items or ())]:
        if part.tag == ARRAY:
            return where, part
        inner = _array_leaf(part, depth + 1)
        if inner is not None:
            return where + inner[0], inner[1]
    return None


def _control_bound(model: FileModel, node: ast.AST) -> bool:
    """An argument of a lax control-flow call (`fori_loop(0, cfg.steps, ...)`): a loop bound or
    a branch index, not data the derivative flows through."""
    parent = model.index.parent(node)
    return isinstance(parent, ast.Call) and (model.index.qualname(parent.func) or "") in LAX_CONTROL


LAX_CONTROL = frozenset({"jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.scan", "jax.lax.cond",
                         "jax.lax.switch", "jax.lax.map"})


def _unfixable(cls: str) -> str:
    return (f"it receives a `{cls}` object, which can be a differentiable argument or a residual only as a "
            f"registered pytree")


def _record_evidence(model: FileModel, d: CustomDerivative, arg: ast.expr, position: int,
                     name: str) -> Optional[Evidence]:
    """A record (a dataclass, NamedTuple or plain object built here) passed whole: JAX checks its
    leaves for tracers. A field holding an array is array evidence; a field holding a parameter
    nothing shows static (`Potential(rest=rest)`), that the custom derivative reads as array data
    (`x - cfg.rest`), says the slot may receive a tracer from whoever differentiates that parameter."""
    if model.index.enclosing_function(arg) is None or isinstance(arg, ast.Name) and any(
            model.index.scope_of(b.node) is model.index.module_scope
            for b in model.index.lookup(arg.id, model.index.scope_of(arg))):
        return None  # an object built at module level is never a tracer
    kind = model.facts.values().of(arg)
    if kind.tag != "record":
        return None

    if graph_node(model, arg, model.index.scope_of(arg)) is not None:
        return None  # an nnx Module/Variable: nnx's own protocol for graph nodes decides (VJP103)
    line = arg.lineno
    quoted = model.quote(arg, 50)
    cls = getattr(kind.node, "name", "record")
    built = f" ({kind.why})" if kind.why and kind.why != f"`{quoted}`" else ""
    leaf = _array_leaf(kind)
    if leaf is not None:
        where, part = leaf
        what = f"a traced value ({part.traced})" if part.traced else "an array"
        return Evidence("array", 2, f"receives a `{cls}` at line {line} whose field `{where[1:]}` holds {what}: "
                                    f"`{quoted}`{built}", line, unfixable=_unfixable(cls))
    found = kind.origin_leaf()
    if found is None or not found[0].startswith(".") or not open_parameter(model, found[1]):
        return None
    field_name = found[0][1:].split(".")[0].split("[")[0]
    fwd = d.rule("fwd")
    bodies = [(d.primal, name)] if d.primal is not None else []
    fwd_param = _param_at(fwd, position)
    if fwd is not None and fwd.node is not None and fwd_param is not None:
        bodies.append((fwd.node, fwd_param))
    for body, param in bodies:
        use = numeric_use(model, body, lambda n, p=param: isinstance(n, ast.Attribute) and n.attr == field_name and
                          isinstance(n.value, ast.Name) and n.value.id == p and isinstance(n.ctx, ast.Load) and
                          not _control_bound(model, n))
        if use is not None:
            fn, origin_param, chain = found[1]
            fname = getattr(fn, "name", "<lambda>")
            chain = chain.replace(f"`{origin_param}` is a parameter of `{fname}`", "").rstrip("; ")
            return Evidence("array", 3, f"receives a `{cls}` at line {line} whose field `{found[0][1:]}` comes from "
                                        f"`{origin_param}`, a parameter of `{fname}`"
                                        f"{f' ({chain})' if chain else ''}, and `{model.quote(use, 40)}` (line {use.lineno}) uses it as "
                                        f"array data: if `{getattr(fn, 'name', '<lambda>')}` is differentiated "
                                        f"with respect to `{origin_param}`, the slot holds a tracer", line, may=True,
                                        unfixable=_unfixable(cls))
    return None


def _external_evidence(d: CustomDerivative, arg: "ExternalArg", call: "ExternalCall") -> Optional[Evidence]:
    """What a call in another module passes, as its summary (vjplint.facts.crossmodule) says."""
    chain = f" ({arg.why})" if arg.why else ""
    if arg.tag == "static":
        return Evidence("static", 2, f"receives `{arg.quoted}` at {call.where}{chain}")
    if arg.tag == ARRAY:
        return Evidence("array", 3 if arg.traced else 2, f"receives an array at {call.where}: `{arg.quoted}`"
                                                          f"{chain}", key=arg.dtype == "key")
    if arg.tag in STATIC_TAGS and arg.why:
        return Evidence("static", 2, f"receives a Python value at {call.where}: `{arg.quoted}`{chain}")
    if arg.tag == CALLABLE:
        return Evidence("callable", 3, f"receives a function at {call.where}: `{arg.quoted}`{chain}")
    return None


@query(memo=False)
def argument_at(call: ast.Call, position: int, name: str) -> Optional[ast.expr]:
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if i == position:
            return arg
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


@query(memo=False)
def partial_argument(call: ast.Call, position: int, name: str) -> Optional[ast.expr]:
    """What `functools.partial(f, a, b, name=c)` binds to `f`'s parameter (`position`, `name`)."""
    bound = call.args[1:]
    if any(isinstance(a, ast.Starred) for a in bound):
        return None
    if position < len(bound):
        return bound[position]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _literal_display(expr: Optional[ast.expr], depth: int = 0) -> bool:
    """A constant (signed or not), or a tuple, list or dict display holding only constants (keys
    included), at any depth: `(1, 2)`, `{'scale': 0.5, 'chunk': 4}`; no name, call or `**`."""
    if expr is None or depth > 5:
        return False
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        return isinstance(expr.operand, ast.Constant)
    if isinstance(expr, (ast.Tuple, ast.List)):
        return all(_literal_display(e, depth + 1) for e in expr.elts)
    if isinstance(expr, ast.Dict):
        return all(k is not None and _literal_display(k, depth + 1) and _literal_display(v, depth + 1)
                   for k, v in zip(expr.keys, expr.values))
    return False


def _call_site_argument(model: FileModel, arg: ast.expr, enclosing: Optional[FunctionNode],
                        ) -> Optional[Evidence]:
    line = arg.lineno
    where = f"line {line}"
    if isinstance(arg, ast.Lambda):
        return Evidence("callable", 3, f"receives a lambda at {where}", line)
    if isinstance(arg, ast.Constant) or (isinstance(arg, ast.UnaryOp) and isinstance(arg.operand, ast.Constant)):
        return Evidence("static", 2, f"receives the literal `{model.quote(arg)}` at {where}", line)
    if isinstance(arg, ast.Tuple) and all(isinstance(e, ast.Constant) for e in arg.elts):
        return Evidence("static", 2, f"receives the literal `{model.quote(arg)}` at {where}", line)
    if isinstance(arg, (ast.Tuple, ast.List, ast.Dict)) and _literal_display(arg):
        # Its items are Python values (`cfg['scale']` is a float), but the container used whole as
        # an array operand contradicts it: only a hint, never raised to decisive below.
        return Evidence("static", 2, f"receives the literal `{model.quote(arg, 60)}` at {where}", line,
                        container=True)
    if isinstance(arg, ast.Call):
        q = model.index.qualname(arg.func) or ""
        if q in (*PARTIAL, "jax.tree_util.Partial"):
            return Evidence("callable", 3, f"receives a partial function at {where}", line)
        if q.startswith(ARRAY_ARGUMENT_NAMESPACES) and not q.endswith(("dtype", "float32", "int32")):
            key = q.startswith("jax.random.") and q.rsplit(".", 1)[-1] in KEY_FUNCTIONS
            return Evidence("array", 2, f"receives an array at {where}: `{model.quote(arg)}`", line, key=key)
    if isinstance(arg, (ast.Name, ast.Attribute)):
        scope = model.index.scope_of(arg)
        bindings = model.index.lookup(arg.id, scope) if isinstance(arg, ast.Name) else []
        if any(b.kind == "def" for b in bindings):
            return Evidence("callable", 3, f"receives the function `{model.quote(arg)}` at {where}", line)
        if bindings and all(b.kind == "param" for b in bindings) and enclosing in model.traced \
                and arg.id in model.traced[enclosing].static_params:  # type: ignore[union-attr]
            return Evidence("static", 2, f"receives `{arg.id}`, a static argument of the traced caller, at {where}",
                            line)
        if bindings and model.index.scope_of(bindings[0].node) is model.index.module_scope:
            if constant_value(model.index, arg) is not None:
                return Evidence("static", 2, f"receives the module constant `{model.quote(arg)}` at {where}", line)
        q = model.index.qualname(arg, scope) or ""
        if q.startswith(FUNCTION_NAMESPACES) and isinstance(arg, ast.Attribute):
            return Evidence("callable", 3, f"receives the function `{model.quote(arg)}` at {where}", line)
    return None


def _call_site_kind(model: FileModel, arg: ast.expr) -> Optional[Evidence]:
    """What `vjplint.facts.value_kinds` infers for an argument the syntax alone does not settle. A traced
    parameter passed on may be a Python number at the outer call: VJP104 reports that call."""
    kind = model.facts.values().of(arg)
    line = arg.lineno
    passed_on = isinstance(arg, ast.Name) and all(
        b.kind == "param" for b in model.index.lookup(arg.id, model.index.scope_of(arg)))
    if kind.tag == ARRAY and not (kind.traced and passed_on):  # a traced parameter passed on: VJP104's
        chain = f" ({kind.why})" if kind.why and kind.why != f"`{model.quote(arg, 50)}`" else ""
        return Evidence("array", 2, f"receives an array at line {line}: `{model.quote(arg, 50)}`{chain}", line,
                        key=kind.dtype == "key")
    if kind.is_static and kind.why:
        return Evidence("static", 2, f"receives a Python value at line {line} ({kind.why})", line)
    if kind.tag == CALLABLE and kind.node is not None:
        return Evidence("callable", 3, f"receives a function at line {line} ({kind.why})", line)
    return None
