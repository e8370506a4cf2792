"""Input synthesis, the static half: read the original source (never import it) and describe,
for each parameter of a rewritten custom_vjp, how the harness should make a value for it.

A description is a JSON-able dict. The harness turns it into values and probes unknown
shapes with `jax.eval_shape`; whatever cannot be described makes the function unverified,
with the reason, never passed.

Sources, best first: the user's `examples` (a whole argument list), a jaxtyping or array
annotation with a known shape, a value at one of the module's own call sites (a literal, or an
expression over module-level names only), the parameter's default, the other annotations
(`float`, `int`, `Callable[[...], ...]`, an array of unknown shape), then the parameter's
role (a differentiable or moved argument of a custom_vjp is an array: its shape is probed).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from vjplint.model.file_model import CustomDerivative, FileModel, Signature
from vjplint.model.semantic import own_nodes
from vjplint.facts.infer import argument_at

# jaxtyping dtype markers -> the dtype the harness creates.
JAXTYPING_DTYPES: Dict[str, str] = {
    "Float": "float32", "Float16": "float16", "Float32": "float32", "Float64": "float64",
    "BFloat16": "bfloat16", "Inexact": "float32", "Real": "float32", "Num": "float32", "Shaped": "float32",
    "Int": "int32", "Integer": "int32", "Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64",
    "UInt": "uint32", "UInt8": "uint8", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64",
    "Bool": "bool", "Complex": "complex64", "Complex64": "complex64", "Complex128": "complex128",
    "Key": "key",
}
ARRAY_TAILS = frozenset({"Array", "ArrayLike", "ndarray", "ArrayTree", "Tensor", "NDArray"})
KEY_TAILS = frozenset({"PRNGKeyArray", "KeyArray", "PRNGKey"})
SCALAR_TAILS = {"float": "float", "int": "int", "bool": "bool", "complex": "float"}
# Sizes given to named jaxtyping dimensions, in order of first appearance: distinct sizes
# make a transposed or mismatched axis fail loudly instead of passing by coincidence.
DIM_SIZES = (3, 4, 5, 2, 6, 7, 8)


@dataclass
class FunctionPlan:
    """What the harness needs to verify one rewritten function."""

    name: str  # the derivative's name, as the fix reports it
    qualname: str  # attribute path from the module: `clip` or `Ops.clip`
    line: int
    moved: Tuple[int, ...]
    params: List[Dict[str, Any]] = field(default_factory=list)
    example: Optional[str] = None  # "module:callable" from [tool.vjplint.verify] examples
    unverifiable: Optional[str] = None  # why nothing can be run, decided statically
    # A custom_vjp defined and called inside a module-level function (`driver_plan`): the harness
    # runs that function and verifies the custom_vjp it calls, with the arguments it passes.
    driver: Optional[Dict[str, Any]] = None
    # A primal taking `*args` whose calls give the arity (recorded, an example): the parameter's
    # name and the nondiff positions past the named ones; the checker adds a parameter per extra
    # argument a call passes (vjplint.verify.verifier.samples_from_args).
    vararg: Optional[Dict[str, Any]] = None

    def to_json(self) -> Dict[str, Any]:
        data = {"name": self.name, "qualname": self.qualname, "line": self.line, "moved": list(self.moved),
                "params": self.params, "example": self.example, "unverifiable": self.unverifiable,
                "driver": self.driver}
        if self.vararg is not None:
            data["vararg"] = self.vararg
        return data


def derivative_at(model: FileModel, line: int) -> Optional[CustomDerivative]:
    """The derivative whose primal's code starts at `line` (a code object's first line: its
    first decorator, else its `def`); a lambda's by its own line."""
    for d in model.derivatives:
        primal = d.primal
        if primal is None:
            continue
        first = min([primal.lineno] + [dec.lineno for dec in getattr(primal, "decorator_list", [])])
        if line in (first, primal.lineno):
            return d
    return None


def plan_function(model: FileModel, d: CustomDerivative, moved: Sequence[int],
                  example: Optional[str] = None, from_callers: bool = False, live: bool = False,
                  recorded: bool = False) -> FunctionPlan:
    """`from_callers` (check-grads): also guess an array for a nondiff parameter used as one, and
    take the domain of an argument every caller normalises. `live`: for the object a run called
    (vjplint.record), where it was defined does not matter (no driver, nothing to reach by name).
    A primal taking `*args` is planned when its calls give the arity: `live` or `recorded`
    (the project's runs), or an `example`; otherwise it is not checked."""
    qualname = f"{d.class_node.name}.{d.name}" if d.class_node is not None else d.name
    instance = _through_module_instance(model, d)  # `self.quantize = jax.custom_vjp(...)` in `__init__`
    instance = instance or _factory_result(model, d)  # `_solve = make_solver(60)`, which returns it
    plan = FunctionPlan(d.name, instance or qualname, getattr(d.anchor, "lineno", 1), tuple(sorted(moved)),
                        example=example)
    sig = d.signature
    driver = None
    if d.enclosing is not None and instance is None and d.primal is not None and sig is not None and not live:
        driver = _driver(model, d)
    if d.primal is None or sig is None:
        plan.unverifiable = "the primal function is not defined in this file"
    elif d.enclosing is not None and instance is None and driver is None and not live:
        plan.unverifiable = (f"`{d.name}` is defined inside `{getattr(d.enclosing, 'name', '<lambda>')}`, which "
                             f"neither calls it nor is a factory whose result the module binds: the harness can "
                             f"only reach module-level functions and class attributes")
    elif sig.vararg is not None and not (live or recorded or example or _has_example_args(model)):
        plan.unverifiable = f"`{d.name}` takes `*{sig.vararg}`: the number of arguments is not known"
        if from_callers:
            plan.unverifiable += VARARG_HOW
    elif sig.kwonly and any(k not in sig.defaults for k in sig.kwonly):
        plan.unverifiable = f"`{d.name}` has required keyword-only parameters"
    if plan.unverifiable is not None:
        return plan
    assert sig is not None
    nondiff_after = set(d.nondiff) - set(moved)
    if d.api == "equinox" and d.kind == "vjp":  # only `vjp_arg` is differentiated: equinox raises for the others
        nondiff_after |= set(range(1, len(sig.positional)))
    if sig.vararg is not None:
        plan.vararg = {"name": sig.vararg, "static": sorted(i for i in nondiff_after if i >= len(sig.positional))}
    dims: Dict[str, int] = {}
    sites = _call_site_values(model, d, sig.positional)
    normalised = _call_site_normalised(d, sig.positional)
    symmetrised = _call_site_symmetrised(d, sig.positional) if from_callers else {}
    derived = _call_site_derived(model, d, sig.positional) if from_callers else {}
    bodies = [fn for fn in (d.primal, _rule_node(d, "fwd")) if fn is not None]
    rules = [r.node for reg in d.registrations for r in reg.rules if r is not None and r.node is not None]
    for position, name in enumerate(sig.positional):
        role = "moved" if position in moved else "static" if position in nondiff_after else "diff"
        spec = _describe(model, name, sig.annotations.get(name), name in sig.defaults, sites.get(position), role,
                         dims, bodies)
        if from_callers and spec["kind"] == "unknown" and role == "static":
            use = _array_use(bodies + rules, name)
            if use is not None:
                spec = {"kind": "array", "dtype": "float32", "shape": None,
                        "source": f"assumed: a nondiff argument used as an array (`{use}`)"}
        if spec["kind"] == "unknown" and role == "static":  # verify and check-grads alike
            number = _number_use(bodies + rules, name)
            if number is not None:
                spec = {"kind": "float", "source": f"assumed: a nondiff argument used as a number (`{number}`)"}
        if from_callers and spec["kind"] == "array" and str(spec.get("source", "")).startswith("assumed") and \
                position in normalised:
            spec["domain"] = "unit"
            spec["source"] += f"; of unit norm, as the module's caller passes it (line {normalised[position]})"
        if position in symmetrised and spec["kind"] in ("array", "unknown"):
            # The rule is written for symmetric matrices (eigh's perturbation theory): checked along
            # symmetric directions, as the module's callers only ever pass it one.
            spec["domain"] = "symmetric"
            spec["symmetrised"] = symmetrised[position]
        if position in derived and role == "diff":
            # Every call computes it from another argument (dynamiqs's QR cache of `A`, passed beside `A`):
            # moved with that argument, not alone.
            spec["derived"] = derived[position]
        spec.update(name=name, position=position, role=role)
        plan.params.append(spec)
    if driver is not None:  # the arguments are the ones the enclosing function passes
        plan.driver = driver
        plan.params = [{"kind": "captured", "name": p["name"], "position": p["position"], "role": p["role"],
                        "source": f"passed by `{driver['qualname']}`"} for p in plan.params]
    return plan


VARARG_HOW = (" (its calls give it: record a run that calls it, `check-grads PATH --record -- CMD`, or give "
              "inputs in EXAMPLE_ARGS() or [tool.vjplint.verify] examples)")


def _has_example_args(model: FileModel) -> bool:
    """Whether the module defines `EXAMPLE_ARGS` (whose entries may give a `*args` primal's arity)."""
    return bool(model.index.module_scope.bindings.get("EXAMPLE_ARGS"))


def _factory_result(model: FileModel, d: CustomDerivative) -> Optional[str]:
    """`_solve` for a custom_vjp a module-level factory defines and returns (`def make_solver(n):
    ... return solver_fun`) when the module binds the factory's result once (`_solve =
    make_solver(60)`): the harness reaches that instance there. None otherwise."""
    factory = d.enclosing
    if not isinstance(factory, ast.FunctionDef) or model.index.parent(factory) is not model.module:
        return None
    returned = [node.value for node in own_nodes(factory) if isinstance(node, ast.Return)]
    if not returned or not all(isinstance(v, ast.Name) and v.id == d.name for v in returned):
        return None
    found = [name for name, bindings in model.index.module_scope.bindings.items()
             if len(bindings) == 1 and bindings[0].kind == "assign" and isinstance(bindings[0].value, ast.Call)
             and isinstance(bindings[0].value.func, ast.Name) and bindings[0].value.func.id == factory.name]
    return found[0] if len(found) == 1 else None


def _driver(model: FileModel, d: CustomDerivative) -> Optional[Dict[str, Any]]:
    """A custom_vjp defined inside a module-level function that calls it (praxis's
    `einsum_with_custom_grad` defines `_custom_einsum` and returns `_custom_einsum(x, w, key)`):
    that function is run, its parameters described as a plain function's, and the harness
    verifies the custom_vjp it calls with the arguments it passes (matched by the primal's
    `__qualname__`, `outer.<locals>.inner`). None when the function does not call it."""
    outer = d.enclosing
    if not isinstance(outer, ast.FunctionDef) or model.index.parent(outer) is not model.module:
        return None
    if not any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == d.name
               for node in own_nodes(outer)):
        return None

    sig = Signature.of(outer)
    if sig.vararg is not None or (sig.kwonly and any(k not in sig.defaults for k in sig.kwonly)):
        return None
    sites = _plain_call_site_values(model, outer.name, sig.positional)
    dims: Dict[str, int] = {}
    params = []
    for position, name in enumerate(sig.positional):
        spec = _describe(model, name, sig.annotations.get(name), name in sig.defaults, sites.get(position), "diff",
                         dims, [outer])
        spec.update(name=name, position=position, role="diff")
        params.append(spec)
    return {"qualname": outer.name, "params": params,
            "target": f"{outer.name}.<locals>.{d.primal.name}" if isinstance(d.primal, ast.FunctionDef) else None}


def _plain_call_site_values(model: FileModel, name: str, params: List[str]) -> Dict[int, Dict[str, Any]]:
    """Values for a module-level function's positions from the module's own calls of it."""
    merged: Dict[int, Dict[str, Any]] = {}
    for node in ast.walk(model.module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            for position, param in enumerate(params):
                arg = argument_at(node, position, param)
                value = _site_value(model, arg) if arg is not None else None
                if value is not None:
                    merged.setdefault(position, value)
    return merged


def _call_site_normalised(d: CustomDerivative, params: List[str]) -> Dict[int, int]:
    """Positions every one of the module's own calls passes normalised (`q / jnp.linalg.norm(q)`):
    the caller's domain, used for values that are otherwise assumed. Position -> a line."""
    own = {d.primal} | {r.node for reg in d.registrations for r in reg.rules if r is not None and r.node}
    sites = [site for site in d.call_sites if site.enclosing not in own]  # not fwd calling the primal
    found: Dict[int, int] = {}
    for position, name in enumerate(params):
        args = [argument_at(site.call, position, name) for site in sites]
        if args and all(a is not None and _is_normalised(a) for a in args):
            found[position] = args[0].lineno
    return found


def _call_site_symmetrised(d: CustomDerivative, params: List[str]) -> Dict[int, int]:
    """Positions every one of the module's own calls passes symmetrised, `0.5 * (a + a.T)` in the
    call or as the last assignment of that name before it in the calling function (pyscfad's
    `eigh` wrapper): position -> the line of the symmetrisation."""
    own = {d.primal} | {r.node for reg in d.registrations for r in reg.rules if r is not None and r.node}
    sites = [site for site in d.call_sites if site.enclosing not in own]
    found: Dict[int, int] = {}
    for position, name in enumerate(params):
        lines = [_symmetrised_at(site, argument_at(site.call, position, name)) for site in sites]
        if lines and all(lines):
            found[position] = lines[0]
    return found


def _call_site_derived(model: FileModel, d: CustomDerivative, params: List[str]) -> Dict[int, Dict[str, Any]]:
    """Positions every one of the module's own calls passes as a module-level function of another
    argument of the same call (`cache = _qr_cache(m)` before `_qr_solve_cached(m, cache, b)`, the
    cache's tangent ignored by the rule): position -> {"from": that argument's position, "function":
    its name, "line": the assignment's}. Checked moved with that argument, as the callers use it."""
    own = {d.primal} | {r.node for reg in d.registrations for r in reg.rules if r is not None and r.node}
    sites = [site for site in d.call_sites if site.enclosing not in own]
    module_functions = {name for name, bindings in model.index.module_scope.bindings.items()
                        if len(bindings) == 1 and bindings[0].kind == "def"}
    found: Dict[int, Dict[str, Any]] = {}
    for position, name in enumerate(params):
        seen = []
        for site in sites:
            arg = argument_at(site.call, position, name)
            value = _last_assigned(site, arg.id) if isinstance(arg, ast.Name) else None
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and len(value.args) == 1
                    and not value.keywords and isinstance(value.args[0], ast.Name)
                    and value.func.id in module_functions):
                break
            source = [k for k, other in enumerate(params) if k != position and isinstance(
                argument_at(site.call, k, other), ast.Name) and argument_at(site.call, k, other).id == value.args[0].id]
            if len(source) != 1:
                break
            seen.append({"from": source[0], "function": value.func.id, "line": value.lineno})
        else:
            if seen and all((x["from"], x["function"]) == (seen[0]["from"], seen[0]["function"]) for x in seen):
                found[position] = seen[0]
    return found


def _last_assigned(site: Any, name: str) -> Optional[ast.expr]:
    """The value last assigned to `name` before the call, in the calling function."""
    if site.enclosing is None:
        return None
    last = None
    for node in ast.walk(site.enclosing):
        if isinstance(node, ast.Assign) and node.lineno < site.call.lineno and \
                any(isinstance(t, ast.Name) and t.id == name for t in node.targets) and \
                (last is None or node.lineno > last.lineno):
            last = node
    return last.value if last is not None else None


def _symmetrised_at(site: Any, arg: Optional[ast.expr]) -> int:
    if arg is None:
        return 0
    if _is_symmetrisation(arg):
        return arg.lineno
    if not isinstance(arg, ast.Name) or site.enclosing is None:
        return 0
    last = None
    for node in ast.walk(site.enclosing):
        if isinstance(node, ast.Assign) and node.lineno < site.call.lineno and \
                any(isinstance(t, ast.Name) and t.id == arg.id for t in node.targets) and \
                (last is None or node.lineno > last.lineno):
            last = node
    return last.lineno if last is not None and _is_symmetrisation(last.value) else 0


def _is_symmetrisation(expr: ast.expr) -> bool:
    """`X + X.T`, halved (`0.5 * (...)`, `(...) / 2`); the transpose also as `.mT`, `.T.conj()`,
    `.conj().T`, `swapaxes(X, -1, -2)`."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        expr = expr.right if isinstance(expr.left, ast.Constant) else expr.left if isinstance(
            expr.right, ast.Constant) else expr
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div) and isinstance(expr.right, ast.Constant):
        expr = expr.left
    if not (isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add)):
        return False
    left, right = ast.dump(expr.left), ast.dump(expr.right)
    return _transposed(expr.right) == left or _transposed(expr.left) == right


def _transposed(expr: ast.expr) -> str:
    """The dump of X when `expr` transposes X's last two axes (conjugated or not), else ""."""
    def strip_conj(e: ast.expr) -> ast.expr:
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "conj" and not e.args:
            return e.func.value
        return e
    expr = strip_conj(expr)
    if isinstance(expr, ast.Attribute) and expr.attr in ("T", "mT"):
        return ast.dump(strip_conj(expr.value))
    if isinstance(expr, ast.Call):
        func = expr.func
        tail = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        args = list(expr.args) if tail == "swapaxes" else []
        if isinstance(func, ast.Attribute) and tail == "swapaxes" and len(args) == 2:
            args = [func.value] + args  # the method form
        if len(args) == 3 and all(isinstance(a, ast.UnaryOp) or isinstance(a, ast.Constant) for a in args[1:]):
            axes = sorted(ast.literal_eval(a) for a in args[1:])
            if axes == [-2, -1]:
                return ast.dump(strip_conj(args[0]))
    return ""


def _is_normalised(arg: ast.expr) -> bool:
    if not (isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Div) and isinstance(arg.right, ast.Call)):
        return False
    call = arg.right
    func = call.func
    tail = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return tail == "norm" and bool(call.args) and ast.dump(call.args[0]) == ast.dump(arg.left)


# `jnp.zeros_like(y)`: a value shaped like the argument, as a rule builds a tangent or cotangent for it.
ARRAY_LIKE_CALLS = frozenset({"zeros_like", "ones_like", "full_like", "empty_like"})


def _array_use(bodies: List[Any], name: str) -> Optional[str]:
    """`jnp.zeros_like(y)` for a nondiff parameter with no other description, in the primal or a
    rule: the rule treats it as an array (a zero tangent for an array moved into nondiff_argnums).
    None otherwise: arithmetic (`x ** n`, `x * scale`) is as common with Python scalars."""
    for body in bodies:
        for node in ast.walk(body):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and node.args and \
                    isinstance(node.args[0], ast.Name) and node.args[0].id == name and \
                    (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) in ARRAY_LIKE_CALLS:
                return ast.unparse(node)
    return None


SHAPE_CALLS = {"zeros", "ones", "full", "empty", "arange", "range", "reshape", "broadcast_to", "eye", "tile",
               "repeat", "split", "take", "linspace", "shape"}


def _number_use(bodies: List[Any], name: str) -> Optional[str]:
    """`g * scale` for a nondiff parameter with no other description: arithmetic with it, and no use
    as a size, an index or a function (`jnp.zeros(n)`, `x[n]`, `scale(x)`): a Python float is
    synthesised for it (a hyperparameter). None otherwise."""
    found = None
    for body in bodies:
        for node in ast.walk(body):
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div, ast.Add, ast.Sub, ast.Pow)) \
                    and any(isinstance(side, ast.Name) and side.id == name for side in (node.left, node.right)):
                found = found or ast.unparse(node)
            elif isinstance(node, ast.Call):
                callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if isinstance(node.func, ast.Name) and node.func.id == name:
                    return None
                direct = [a for arg in list(node.args) + [k.value for k in node.keywords]
                          for a in ([arg] + (list(arg.elts) if isinstance(arg, (ast.Tuple, ast.List)) else []))]
                if callee in SHAPE_CALLS and any(isinstance(a, ast.Name) and a.id == name for a in direct):
                    return None
            elif isinstance(node, ast.Subscript) and any(isinstance(a, ast.Name) and a.id == name
                                                         for a in ast.walk(node.slice)):
                return None
    return found[:60] if found else None


def _rule_node(d: CustomDerivative, role: str) -> Any:
    rule = d.rule(role)
    return rule.node if rule is not None and rule.bound_positional == 0 else None


# -- one parameter --------------------------------------------------------------------------------
def _describe(model: FileModel, name: str, annotation: Optional[ast.expr], has_default: bool,
              site: Optional[Dict[str, Any]], role: str, dims: Dict[str, int], bodies: List[Any]) -> Dict[str, Any]:
    from_annotation = _from_annotation(model, annotation, dims) if annotation is not None else None
    if from_annotation is not None and from_annotation["kind"] in ("array", "key", "instance") and \
            from_annotation.get("shape", ()) is not None:
        return from_annotation
    if site is not None:
        return site
    if has_default:
        return {"kind": "default", "source": "default"}
    key_use = _prng_key_use(model, bodies[0], name)
    if key_use is not None:
        return {"kind": "key", "shape": [], "source": f"used as a PRNG key: `{key_use}`"}
    instance = _instance_by_attributes(model, bodies, name, dims)
    if instance is not None:
        return instance
    if from_annotation is not None and from_annotation["kind"] != "unknown":
        return from_annotation
    called = _called_with(bodies, name) if role == "static" else None
    if called is not None:  # `f(x)` in the primal: a function (JAX never differentiates a nondiff one)
        return {"kind": "callable", "arity": len(called.args), "source": f"called: `{ast.unparse(called)[:60]}`"}
    if role in ("moved", "diff"):
        why = "a moved argument (an array, as the fix assumed)" if role == "moved" else "a differentiable argument"
        return {"kind": "array", "dtype": "float32", "shape": None, "source": f"assumed: {why}"}
    reason = from_annotation["reason"] if from_annotation is not None else \
        "no annotation, default or call site gives a value"
    return {"kind": "unknown", "reason": f"`{name}`: {reason}"}


def _called_with(bodies: List[Any], name: str) -> Optional[ast.Call]:
    """The first call of parameter `name` with positional arguments only, in the primal or fwd."""
    for body in bodies:
        for node in ast.walk(body):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name and \
                    not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args):
                return node
    return None


def _from_annotation(model: FileModel, annotation: ast.expr, dims: Dict[str, int],
                     depth: int = 0) -> Optional[Dict[str, Any]]:
    if depth > 4:
        return None
    quoted = ast.unparse(annotation)
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    source = f"annotation `{quoted}`"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [s for s in (annotation.left, annotation.right) if not _is_none(s)]
        return _from_annotation(model, sides[0], dims, depth + 1) if len(sides) == 1 else None
    base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    q = model.index.qualname(base) or ""
    tail = q.rsplit(".", 1)[-1] if q else (base.attr if isinstance(base, ast.Attribute) else "")
    if isinstance(annotation, ast.Subscript):
        parts = list(annotation.slice.elts) if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        if tail in ("Optional", "Union"):
            kept = [p for p in parts if not _is_none(p)]
            return _from_annotation(model, kept[0], dims, depth + 1) if len(kept) == 1 else None
        if tail == "Annotated":
            return _from_annotation(model, parts[0], dims, depth + 1)
        if tail in JAXTYPING_DTYPES and q.startswith("jaxtyping.") and len(parts) == 2:
            return _jaxtyping(tail, parts[1], dims, source)
        if tail == "Callable":
            arity = len(parts[0].elts) if parts and isinstance(parts[0], ast.List) else None
            return {"kind": "callable", "arity": arity, "source": source}
    if tail == "Callable":
        return {"kind": "callable", "arity": None, "source": source}
    if isinstance(base, ast.Name) and base is annotation:
        cls = _module_class(model, base.id)
        if cls is not None:
            return _instance(model, cls, dims, source)
    if tail in KEY_TAILS:
        return {"kind": "key", "shape": [], "source": source}
    if tail in ARRAY_TAILS and (q.startswith(("jax", "numpy", "chex", "jaxtyping")) or not q):
        return {"kind": "array", "dtype": "float32", "shape": None, "source": source}
    if q.startswith("builtins.") and tail in SCALAR_TAILS:
        return {"kind": SCALAR_TAILS[tail], "source": source}
    return {"kind": "unknown", "reason": f"cannot make a value of type `{quoted}`"}


def _jaxtyping(tail: str, spec: ast.expr, dims: Dict[str, int], source: str) -> Dict[str, Any]:
    dtype = JAXTYPING_DTYPES[tail]
    text = spec.value if isinstance(spec, ast.Constant) and isinstance(spec.value, str) else None
    shape = _jaxtyping_shape(text, dims) if text is not None else None
    if dtype == "key":
        return {"kind": "key", "shape": shape, "source": source}
    return {"kind": "array", "dtype": dtype, "shape": shape, "source": source}


def _jaxtyping_shape(text: str, dims: Dict[str, int]) -> Optional[List[int]]:
    """`"batch n 3"` -> sizes; variadic dims (`...`, `*b`) are empty; None if not understood."""
    shape: List[int] = []
    for token in text.split():
        token = token.lstrip("#")
        if token in ("...", "*") or token.startswith("*"):
            continue
        if token.startswith("_"):
            token = token[1:] or "_anonymous"
        if "=" in token:
            token = token.split("=", 1)[1]
        if token.isdigit():
            shape.append(int(token))
        elif re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", token):
            if token not in dims:
                dims[token] = DIM_SIZES[len(dims) % len(DIM_SIZES)]
            shape.append(dims[token])
        else:  # arithmetic such as `n+1`: evaluate over the sizes chosen so far
            try:
                value = eval(compile(ast.parse(token, mode="eval"), "<dim>", "eval"), {"__builtins__": {}}, dict(dims))
            except Exception:
                return None
            if not isinstance(value, int) or value < 0:
                return None
            shape.append(value)
    return shape


def _prng_key_use(model: FileModel, fn: Any, name: str) -> Optional[str]:
    """The first `jax.random.*(name, ...)` call in the primal's body, quoted; None if none."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) and \
                node.args[0].id == name and (model.index.qualname(node.func) or "").startswith("jax.random."):
            text = ast.unparse(node)
            return text if len(text) <= 60 else text[:57] + "..."
    return None


# -- pytree objects (a layer or module holding arrays) ---------------------------------------------
ARRAY_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size", "T", "mT", "real", "imag", "at", "astype", "reshape",
                              "sum", "mean", "max", "min", "transpose", "squeeze", "ravel", "flatten", "item"})


def _module_class(model: FileModel, name: str) -> Optional[ast.ClassDef]:
    bindings = model.index.module_scope.bindings.get(name, [])
    if len(bindings) == 1 and bindings[0].kind == "class":
        return bindings[0].node  # type: ignore[return-value]
    return None


def _fields(cls: ast.ClassDef) -> Optional[List[Tuple[str, Optional[ast.expr]]]]:
    """(name, annotation) of what the constructor takes: `__init__`'s parameters, else the
    annotated class attributes (dataclass style); None when the constructor is unclear."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            args = node.args
            if args.vararg or args.kwarg:
                return None
            params = [*args.posonlyargs, *args.args][1:]
            return [(a.arg, a.annotation) for a in [*params, *args.kwonlyargs]]
    fields = [(n.target.id, n.annotation) for n in cls.body
              if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is None]
    return fields or None


def _instance(model: FileModel, cls: ast.ClassDef, dims: Dict[str, int], source: str) -> Dict[str, Any]:
    fields = _fields(cls)
    if fields is None:
        return {"kind": "unknown", "reason": f"cannot tell what `{cls.name}(...)` takes"}
    specs = []
    for name, annotation in fields:
        spec = _from_annotation(model, annotation, dims) if annotation is not None else None
        if spec is None or spec["kind"] not in ("array", "float", "int", "bool", "key"):
            spec = {"kind": "array", "dtype": "float32", "shape": None}
        spec["name"] = name
        specs.append(spec)
    return {"kind": "instance", "class": cls.name, "fields": specs, "source": source}


def _instance_by_attributes(model: FileModel, bodies: List[Any], name: str,
                            dims: Dict[str, int]) -> Optional[Dict[str, Any]]:
    """An object read through attributes (`layer.kernel`): the one module-level class whose
    constructor takes exactly those fields, if it is unambiguous."""
    used = set()
    for fn in bodies:
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
                used.add(node.attr)
    used -= ARRAY_ATTRIBUTES
    if not used:
        return None
    matches = []
    for binding_list in model.index.module_scope.bindings.values():
        for binding in binding_list:
            if binding.kind == "class":
                fields = _fields(binding.node)  # type: ignore[arg-type]
                methods = {n.name for n in binding.node.body if isinstance(n, ast.FunctionDef)}  # type: ignore
                if fields is not None and used <= {f for f, _ in fields} | methods:
                    matches.append(binding.node)
    if len(matches) != 1:
        return None
    attrs = ", ".join(f"`{name}.{a}`" for a in sorted(used))
    return _instance(model, matches[0], dims, f"the class whose fields match {attrs}")


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _through_module_instance(model: FileModel, d: CustomDerivative) -> Optional[str]:
    """`QUANTIZER.quantize` for a custom_vjp a method stores on its instance (`self.quantize =
    jax.custom_vjp(self._quantize, ...)`) when the module makes one instance of that class at
    the top level (`QUANTIZER = Quantizer()`): the harness reaches it there. None otherwise."""
    method = d.enclosing
    if not isinstance(method, ast.FunctionDef) or not method.args.args:
        return None
    owner = model.index.parent(method)
    receiver = method.args.args[0].arg
    attribute = d.name[len(receiver) + 1:]
    if not isinstance(owner, ast.ClassDef) or not d.name.startswith(f"{receiver}.") or not attribute.isidentifier():
        return None
    found = [name for name, bindings in model.index.module_scope.bindings.items()
             if len(bindings) == 1 and bindings[0].kind == "assign" and isinstance(bindings[0].value, ast.Call)
             and isinstance(bindings[0].value.func, ast.Name) and bindings[0].value.func.id == owner.name]
    return f"{found[0]}.{attribute}" if len(found) == 1 else None


# -- call sites -----------------------------------------------------------------------------------
def _call_site_values(model: FileModel, d: CustomDerivative, params: List[str]) -> Dict[int, Dict[str, Any]]:
    """Values for positions from the module's own calls, the call giving the most first."""
    per_site: List[Dict[int, Dict[str, Any]]] = []
    for site in d.call_sites:
        found: Dict[int, Dict[str, Any]] = {}
        for position, name in enumerate(params):
            arg = argument_at(site.call, position, name)
            if arg is not None:
                value = _site_value(model, arg)
                if value is not None:
                    found[position] = value
        if found:
            per_site.append(found)
    merged: Dict[int, Dict[str, Any]] = {}
    for found in sorted(per_site, key=len, reverse=True):
        for position, value in found.items():
            merged.setdefault(position, value)
    return merged


def _site_value(model: FileModel, arg: ast.expr) -> Optional[Dict[str, Any]]:
    source = f"call site, line {arg.lineno}"
    try:
        value = ast.literal_eval(arg)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    else:
        if isinstance(value, (int, float, bool, str, tuple)) or value is None:
            try:
                json.dumps(value)  # the harness gets it as JSON (no bytes, no complex)
            except (TypeError, ValueError):
                return None
            return {"kind": "literal", "value": value, "source": source}
    if _module_level_expression(model, arg):
        return {"kind": "expr", "expr": ast.unparse(arg), "source": source}
    if isinstance(arg, ast.Name):
        return _caller_default(model, arg)
    return None


def _caller_default(model: FileModel, arg: ast.Name) -> Optional[Dict[str, Any]]:
    """The call passes the caller's own parameter (`_pre_op(config, x, ...)` in `def pre(x, ...,
    config=common.MhcKernelConfig())`, maxtext): its default, when the caller never rebinds it
    and the default is a literal or reads only module-level names."""
    found = model.index.resolve(arg.id, model.index.scope_of(arg))
    if found is None or found[0] is model.index.module_scope or len(found[1]) != 1 or found[1][0].kind != "param":
        return None
    fn = found[0].node
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    default = next((d for a, d in pairs if a is found[1][0].node), None)
    if default is None:
        return None
    value = _site_value(model, default)
    if value is None or value["kind"] not in ("literal", "expr") or value.get("value", 0) is None:
        return None  # a `None` default stands for "not given", not for an example
    return {**value, "source": f"call site, line {arg.lineno}: the default of `{fn.name}`'s parameter `{arg.id}`"}


SAFE_NODES = (ast.Name, ast.Attribute, ast.Constant, ast.Tuple, ast.List, ast.UnaryOp, ast.BinOp, ast.Call,
              ast.Lambda, ast.arguments, ast.arg, ast.keyword, ast.Load, ast.Subscript, ast.Slice,
              ast.operator, ast.unaryop, ast.IfExp, ast.Compare, ast.cmpop)


def _module_level_expression(model: FileModel, expr: ast.expr) -> bool:
    """True when `expr` reads only module-level names (or its own lambda parameters), so the
    harness can evaluate it in the module's namespace."""
    module_names = set(model.index.module_scope.bindings)
    local: set = set()
    for node in ast.walk(expr):
        if not isinstance(node, SAFE_NODES):
            return False
        if isinstance(node, ast.Lambda):
            args = node.args
            local.update(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])
            local.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id not in local:
            found = model.index.resolve(node.id, model.index.scope_of(node))
            if found is not None and found[0] is not model.index.module_scope:
                return False  # the caller's own variable (a parameter, a local), whatever the module binds
        if isinstance(node, ast.Name) and node.id not in local and node.id not in module_names:
            if model.index.qualname(node, model.index.module_scope) != f"builtins.{node.id}":
                return False
            if node.id not in ("abs", "min", "max", "sum", "float", "int", "tuple", "range", "len", "pow"):
                return False
    return True


def plan_plain(model: FileModel, fn: Any, qualname: str, example: Optional[str] = None) -> FunctionPlan:
    """A module-level function a fix rewrote (not itself a custom derivative: the function that
    defines one inside itself, a helper that sniffs tracers): every positional parameter is
    differentiable, described as for a custom_vjp's."""
    plan = FunctionPlan(fn.name, qualname, fn.lineno, (), example=example)
    sig = Signature.of(fn)
    if "." in qualname:
        plan.unverifiable = f"`{qualname}` is a method: the harness calls only module-level functions"
    elif sig.vararg is not None:
        plan.unverifiable = f"`{fn.name}` takes `*{sig.vararg}`: the number of arguments is not known"
    elif sig.kwonly and any(k not in sig.defaults for k in sig.kwonly):
        plan.unverifiable = f"`{fn.name}` has required keyword-only parameters"
    if plan.unverifiable is not None:
        return plan
    dims: Dict[str, int] = {}
    for position, name in enumerate(sig.positional):
        spec = _describe(model, name, sig.annotations.get(name), name in sig.defaults, None, "diff", dims, [fn])
        spec.update(name=name, position=position, role="diff")
        plan.params.append(spec)
    return plan


def module_callers(text: str, name: str) -> List[str]:
    """The module-level functions that call `name`, directly or through one another (by name, in
    the source): what check-grads runs to see the derivative used as its module uses it."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    rules = {a.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr in ("defvjp", "defjvp", "defjvps") for a in n.args if isinstance(a, ast.Name)}
    uses = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (node.name in rules or any(
                isinstance(dec, ast.Attribute) and dec.attr in ("defvjp", "defjvp") for dec in node.decorator_list)):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            uses[node.name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    found: List[str] = []
    targets = {name}
    while True:
        new = [f for f, names in uses.items() if f not in found and f != name and names & targets]
        if not new:
            return found
        found += new
        targets |= set(new)


def nested_callers(text: str, line: int) -> List[str]:
    """For a custom derivative defined inside a module-level function (a factory, a function that
    builds its custom_vjp on every call, at `line`): that function, then the module-level functions
    that call it, directly or through one another. What check-grads runs, after the derivative's
    own checks, to see it used as its module uses it (the callers of a module-level one:
    module_callers)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno < line <= (node.end_lineno or node.lineno):
            return [node.name] + module_callers(text, node.name)
    return []


def text_digest(text: str) -> str:
    """What an in-process verdict (vjplint.record) was made on: check-grads ignores it once the
    file has changed."""
    import hashlib

    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest() if text else ""
