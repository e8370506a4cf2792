from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from vjplint.diagnostics import Severity
from vjplint.facts.param_evidence import Verdict
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.base import Rule
from vjplint.syntax.walk import walk

DIFFERENTIATE = frozenset({"jax.grad", "jax.value_and_grad", "jax.jacobian", "jax.jacfwd", "jax.jacrev", "jax.hessian"})
CHECKPOINT = frozenset({"jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint"})
PARTIAL = frozenset({"functools.partial"})
CONTROL_FLOW = frozenset({"jax.lax.scan", "jax.lax.cond", "jax.lax.switch"})
NCH = "TypeError: No constant handler for type: <class '...DynamicJaxprTracer'>"
UTE = "UnexpectedTracerError: Encountered an unexpected tracer"


class JvpNondiffArray(Rule):
    """## What it does
    Flags a `jax.custom_jvp` nondiff position that receives an array. Off by default (it is
    legal today and common in JAX itself); enabled by `target = "vjp3"` or by selecting it.
    **On by default** where it fails today: the custom_jvp called in a `lax.scan` body with the
    array taken from the carry or the scanned values, or in a function `jax.checkpoint` stages with
    the array taken from its parameters, passed as a `lax.cond`/`lax.switch` branch,
    or jitted (`jax.jit(f)`) and then differentiated (`jax.jacobian`, `jacfwd`, `jacrev`, `grad`).

    A slot every call of the run (this module and, through the project index, the others) gives
    a static Python value (a literal, a module constant) or leaves at a default that is one is
    not an array, whatever the code does with it: no report. The primal or its rule calling the
    primal with the value it received in that slot adds no caller. With no call at all, or a call
    passing something unknown or an array, the evidence is weighed as usual.

    ## Why is this bad?
    custom_jvp wraps every nondiff argument in `stop_gradient`, so any derivative flowing
    through it is silently zero: `grad` with respect to that argument returns `0.0` with no
    error. Under JAX's upcoming `jax_custom_jvp3` nondiff arguments must be static and hashable,
    and arrays fail. Measured on JAX 0.10.2 (`docs/facts/scripts/hazard_families.py`, section A)
    it already fails in some contexts: `grad` of a `lax.scan` whose carry or xs holds the array
    raises `UnexpectedTracerError: Encountered an unexpected tracer` (jax-ml/jax#20889);
    `grad` through a `lax.cond` branch that receives it as an operand (jax-ml/jax#9374), and
    `jax.jacobian`/`jacfwd`/`jacrev`/`grad` of `jax.jit(f)` with the array a jit argument
    (jax-ml/jax#23065), raise `TypeError: No constant handler for type: ...DynamicJaxprTracer`.
    Eager `grad`, `jit(grad)`, `vmap(grad)`, `jit(jacobian(f))`, and a scan or fori_loop body that
    closes over the array work.

    A PRNG key (a nondiff argument used only as `jax.random.*(key, ...)`) has no derivative to
    lose, and eager, `jit`, `vmap` and `grad` handle it, so the off-by-default report skips it,
    except for a key made inside a jitted function (`jax.jit(lambda x, s: f(x, PRNGKey(s)))`):
    `grad` of that function raises `TypeError: No constant handler` (jax-ml/jax#3964). The
    failing contexts above still apply (`grad` of a scan over split keys raises
    `UnexpectedTracerError` on the `uint32[2]` or `key<fry>[]` tracer, jax-ml/jax#29342), and the
    fix there is to make the key a regular argument: its tangent is float0 and the rule ignores it
    (`docs/facts/scripts/hazard_key_and_while.py`). Likewise a mask, a nondiff argument used only
    as the condition of `jnp.where(c, a, b)`/`lax.select` or given a comparison by its callers
    (reading its shape, `jnp.zeros_like(c)`, aside): no derivative flows from it, so the
    off-by-default report skips it too.

    ## Example
    ```python
    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def scaled_sin(a, x):
        return a * jnp.sin(x)
    ```

    ## Use instead
    Make `a` a differentiable argument and give its tangent in the jvp rule.

    ## Fix safety
    No automatic fix.
    """

    CODE = "VJP106"
    NAME = "jvp-nondiff-array"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"custom_jvp",)
    DEFAULT_ENABLED = False
    INVALID = ['''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def scaled_sin(a: jax.Array, x):
    return a * jnp.sin(x)
''']
    VALID = ['''
from functools import partial
import jax
import jax.numpy as jnp

@partial(jax.custom_jvp, nondiff_argnums=(0,))
def scaled_sin(axis: int, x):
    return jnp.sum(jnp.sin(x), axis=axis)
''']

    DEFAULT_REPORTS = True

    def check(self) -> None:
        jvps = [d for d in self.model.derivatives if d.kind == "jvp"]
        if not jvps:
            return
        self._found_calls: Optional[List[Tuple[ast.Call, str]]] = None
        for d in jvps:
            for v in self.model.facts.verdicts(d):
                if v.level is None:
                    continue
                failing = self._failing_context(d, v.position)
                if failing is not None:
                    sig = d.signature
                    assert sig is not None
                    keyword = self.model.facts.nondiff_keyword(d, v.position)
                    evidence = v.best("array")
                    why = f" (it {evidence.reason})" if evidence is not None else ""
                    fix = ("A PRNG key has no derivative, but a traced key in a nondiff slot still breaks here: "
                           "make it a regular argument (its tangent is float0; the rule ignores it)"
                           if _key_only(v) else
                           "custom_jvp nondiff arguments must not be traced arrays. Make it a differentiable "
                           "argument (its tangent may be ignored in the rule), or close over a concrete value")
                    self.report(sig.param_nodes[v.name], (
                        f"`{v.name}` (position {v.position}) is in {keyword} of custom_jvp `{d.name}`{why}, and "
                        f"{failing}. {fix}"), default=True)
                    continue
                if _key_only(v):  # a key has no derivative to lose: only a key made inside a jit may fail
                    staged = self._made_in_jit(d, v.position)
                    if staged is not None:
                        sig = d.signature
                        assert sig is not None
                        keyword = self.model.facts.nondiff_keyword(d, v.position)
                        self.report(sig.param_nodes[v.name], (
                            f"`{v.name}` (position {v.position}) is in {keyword} of custom_jvp `{d.name}` and is a "
                            f"PRNG key made inside a jitted function: {staged}. `jax.grad` of that jitted function "
                            f"raises {NCH} (jax-ml/jax#3964); the jit alone, `jax.jit(jax.grad(...))` and vmap work. "
                            f"Make the key a regular argument (its tangent is float0; the rule ignores it)"))
                    continue
                if _no_derivative(v):
                    continue  # a mask or a shape: stop_gradient loses nothing (the failing contexts are above)
                evidence = v.best("array")
                assert evidence is not None
                sig = d.signature
                assert sig is not None
                keyword = self.model.facts.nondiff_keyword(d, v.position)
                if v.level == "maybe":  # weaker or contradicted evidence: say so
                    against = v.contradictions()
                    contra = f", although it {against[0].reason}" if against else ""
                    self.report(sig.param_nodes[v.name],
                                f"`{v.name}` (position {v.position}) is in {keyword} of custom_jvp `{d.name}` and may "
                                f"be an array: it {evidence.reason}{contra}. If it is, custom_jvp stop-gradients it, so "
                                f"its derivative is silently zero, and it fails under jax_custom_jvp3. Make it a "
                                f"differentiable argument, or annotate it as a static type")
                    continue
                self.report(sig.param_nodes[v.name],
                            f"`{v.name}` (position {v.position}) is in {keyword} of custom_jvp `{d.name}` but "
                            f"{evidence.reason}: custom_jvp stop-gradients nondiff arguments, so its derivative is "
                            f"silently zero, and it fails under jax_custom_jvp3. Make it a differentiable argument")

    @property
    def _calls(self) -> List[Tuple[ast.Call, str]]:
        """The calls the failing contexts are made of, found once per file, and only in a file with
        an array in a custom_jvp nondiff slot (walking every file's nodes costs more)."""
        if self._found_calls is None:
            index = self.model.index
            tails = {q.rsplit(".", 1)[-1] for q in (*DIFFERENTIATE, *CONTROL_FLOW)}
            calls = [n for n in index.nodes if isinstance(n, ast.Call) and _last_name(n.func) in tails]
            self._found_calls = [(n, q) for n, q in ((n, index.qualname(n.func) or "") for n in calls)
                                 if q in DIFFERENTIATE or q in CONTROL_FLOW]
        return self._found_calls

    def _failing_context(self, d: CustomDerivative, position: int) -> Optional[str]:
        """A context measured to fail today (docs/facts/scripts/hazard_families.py, section A)."""
        for node, q in self._calls:
            if q in ("jax.lax.cond", "jax.lax.switch") and any(_is_name(a, d.name) for a in node.args):
                return (f"`{self.quote(node, 40)}` (line {node.lineno}) passes it as a branch operand: under grad "
                        f"this raises {NCH} (jax-ml/jax#9374)")
            if q in DIFFERENTIATE and node.args and self._jitted(node.args[0], d.name):
                return (f"`{self.quote(node, 40)}` (line {node.lineno}) differentiates `jax.jit({d.name})`, which "
                        f"traces it as a jit argument: this raises {NCH} (jax-ml/jax#23065)")
        for site in d.call_sites:
            body = site.enclosing
            scan = body is not None and self._scan_body(body)
            if body is None or not scan and self._staged_by(body, CHECKPOINT) is None:
                continue
            args = site.call.args
            at = position - site.positional_offset
            if not (0 <= at < len(args) and self._from_params(args[at], body)):
                continue
            where = getattr(body, 'name', '<lambda>')
            if scan:
                return (f"it is called in the `lax.scan` body `{where}` (line {site.call.lineno}) with the value "
                        f"taken from the carry or the scanned values: grad of the scan raises {UTE} (jax-ml/jax#20889)")
            return (f"it is called in `{where}` (line {site.call.lineno}), which `jax.checkpoint` stages, with the "
                    f"value taken from its parameters: grad through the checkpoint raises {UTE} (jax-ml/jax#20889)")
        return None

    def _made_in_jit(self, d: CustomDerivative, position: int) -> Optional[str]:
        """A call of `d` in a function given to `jax.jit` (or decorated with it) whose argument at
        `position` is computed there, not a closed-over value (measured: hazard_key_and_while.py)."""
        for site in d.call_sites:
            body = site.enclosing
            jit = self._jit_of(body) if body is not None else None
            args = site.call.args
            at = position - site.positional_offset
            if jit is None or body is None or not 0 <= at < len(args):
                continue
            arg = args[at]
            if isinstance(arg, ast.Call) or self._from_params(arg, body):
                return (f"`{self.quote(arg, 40)}` (line {site.call.lineno}) is computed in the function that "
                        f"`{'@' if jit in getattr(body, 'decorator_list', []) else ''}{self.quote(jit, 40)}` "
                        f"(line {jit.lineno}) stages")
        return None

    def _jit_of(self, body: ast.AST) -> Optional[ast.AST]:
        return self._staged_by(body, frozenset({"jax.jit"}))

    def _staged_by(self, body: ast.AST, names: frozenset) -> Optional[ast.AST]:
        """The `jax.jit(body)` call or `@jax.jit` decorator (`names`: the transformation's qualified
        names; `@partial(jax.checkpoint, ...)` too) that stages `body`, if any."""
        index = self.model.index
        for decorator in getattr(body, "decorator_list", []):
            inner = decorator.args[0] if isinstance(decorator, ast.Call) and decorator.args and \
                index.qualname(decorator.func) in PARTIAL else decorator
            if index.qualname(inner) in names:
                return decorator
        name = getattr(body, "name", None)
        for node in index.of_type(ast.Call):
            if (isinstance(node, ast.Call) and node.args and index.qualname(node.func) in names
                    and (node.args[0] is body or (name is not None and _is_name(node.args[0], name)))):
                return node
        return None

    def _jitted(self, expr: ast.expr, name: str) -> bool:
        if isinstance(expr, ast.Name):
            bindings = self.model.index.lookup(expr.id, self.model.index.scope_of(expr))
            if len(bindings) != 1 or bindings[0].value is None:
                return False
            expr = bindings[0].value
        return (isinstance(expr, ast.Call) and self.model.index.qualname(expr.func) == "jax.jit"
                and bool(expr.args) and _is_name(expr.args[0], name))

    def _scan_body(self, body: ast.AST) -> bool:
        name = getattr(body, "name", None)
        for node, q in self._calls:
            if (q == "jax.lax.scan" and node.args
                    and (node.args[0] is body or (name is not None and _is_name(node.args[0], name)))):
                return True
        return False

    def _from_params(self, expr: ast.expr, body: ast.AST) -> bool:
        """`expr` is a parameter of `body` or a name unpacked from one (not a closed-over value)."""
        if not isinstance(expr, ast.Name):
            return False
        scope = self.model.index.scopes.get(body)
        bindings = scope.bindings.get(expr.id, []) if scope is not None else []
        if any(b.kind == "param" for b in bindings):
            return True
        params = {a.arg for a in (*body.args.posonlyargs, *body.args.args)}  # type: ignore[attr-defined]
        for b in bindings:
            value = b.value
            if value is None and isinstance(b.node, ast.Assign):
                value = b.node.value
            if value is not None and any(isinstance(n, ast.Name) and n.id in params for n in walk(value)):
                return True
        return False


def _key_only(v: Verdict) -> bool:
    """All the array evidence is a use as a PRNG key (`jax.random.normal(key, ...)`)."""
    arrays = [e for e in v.evidence if e.kind == "array"]
    return bool(arrays) and all(e.key for e in arrays)


def _no_derivative(v: Verdict) -> bool:
    """A mask: the array evidence, its shape reads (`jnp.zeros_like(v)`) aside, is all a use as a
    boolean (the condition of `jnp.where(c, a, b)`/`lax.select`, a comparison passed in)."""
    arrays = [e for e in v.evidence if e.kind == "array" and e.no_derivative != "shape"]
    return bool(arrays) and all(e.no_derivative == "mask" for e in arrays)


def _is_name(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name


def _last_name(expr: ast.expr) -> str:
    if isinstance(expr, ast.Name):
        return expr.id
    return expr.attr if isinstance(expr, ast.Attribute) else ""
