"""Is this nondiff argument an array? Evidence with weights and quotable reasons (SPEC section 6).

Weights: 3 = decisive (annotation, config hint, called as a function, a callable at a call
site, a transformation that traces the position); 2 = strong (use as array data, `.shape`, a
static use such as `axis=n`, a literal or an inferred array at a call site); 1 = a hint (the
name) or a weak use (arithmetic with a value `vjplint.facts.value_kinds` knows is an array, indexing an
array). One weak use never convicts (`x ** n`, `x * scale` with a Python `scale` are correct
code); several, with no static evidence at all, make a "maybe": JAX's rule is that
nondiff_argnums is for values that cannot be tracers.

What a parameter's own code says (annotation, default, name, uses) and the verdict types are in
`vjplint.facts.param_evidence` (`Hints`, `Verdict` and `Evidence` are read from here too); this module
weighs them with what the call sites pass and the transformations that trace them.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from vjplint.model.jaxapi import ARRAY_ARGUMENT_NAMESPACES, FUNCTION_NAMESPACES, PARTIAL
from vjplint.model.file_model import CustomDerivative, FileModel, RuleFunction
from vjplint.model.semantic import FunctionNode, constant_value
from vjplint.facts.callsites import leaves_default, static_default
from vjplint.facts.crossmodule import ExternalArg, ExternalCall, external_calls
from vjplint.facts.nondiff_output import output_reasons
from vjplint.facts.kinds import ARRAY, CALLABLE, KEY_FUNCTIONS, STATIC_TAGS
from vjplint.facts.nnx_nodes import graph_node
from vjplint.facts.kinds import CALLABLE as _CALLABLE
from vjplint.facts.values import numeric_use
from vjplint.syntax.walk import walk
from vjplint.facts.param_evidence import (Evidence, Hints, Verdict, annotation_evidence, default_evidence,
                                          flow_evidence, helper_evidence, name_evidence, open_parameter,
                                          usage_evidence)
from vjplint.facts.registry import query


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
            v.evidence.extend(helper_evidence(model, body, param))
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


@query
def nondiff_traced_call(model: FileModel, d: CustomDerivative, position: int, name: str) -> Optional[Tuple[int, str]]:
    """(line, why) of a call of this module that passes nondiff slot `position` a traced plain
    value (a parameter of a jitted, vmapped or differentiated function, or what is computed from
    one): the call VJP104 reports, which raises today. Callables and records are left out (their
    closures are VJP104's and VJP105's business, never a residual's)."""
    values = model.facts.values()
    for site in d.call_sites:
        if site.enclosing is None:
            continue
        traced = model.traced.get(site.enclosing)
        arg = argument_at(site.call, position, name)
        if traced is None or arg is None:
            continue
        if values.of(arg).tag in (_CALLABLE, "record"):
            continue
        reason = model.facts.traced_reason(arg, site.enclosing, traced)
        if reason is not None:
            return arg.lineno, reason
    return None


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
def call_arguments(call: ast.Call, params: Tuple[str, ...], offset: int = 0) -> List[Tuple[int, ast.expr]]:
    """(position, argument) of each argument of a call of a function whose positional parameters
    are `params`: a positional argument at its place plus `offset` (`Class.method(obj, x)`), up to
    the first starred one; a keyword argument at its parameter's position (`f(x=a, n=b)`: JAX
    binds keywords to positions before nondiff_argnums apply). A keyword naming no positional
    parameter is left out."""
    out: List[Tuple[int, ast.expr]] = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return out
        out.append((i + offset, arg))
    taken = {i for i, _ in out}
    for kw in call.keywords:
        if kw.arg is not None and kw.arg in params and params.index(kw.arg) not in taken:
            out.append((params.index(kw.arg), kw.value))
    return out


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
                        key=kind.dtype == "key", no_derivative="mask" if kind.dtype == "bool" else "")
    if kind.is_static and kind.why:
        return Evidence("static", 2, f"receives a Python value at line {line} ({kind.why})", line)
    if kind.tag == CALLABLE and kind.node is not None:
        return Evidence("callable", 3, f"receives a function at line {line} ({kind.why})", line)
    return None
