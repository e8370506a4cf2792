from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set

from vjplint.model.file_model import CustomDerivative
from vjplint.diagnostics import Severity
from vjplint.facts.structure import ARRAY, ELEMENT, RegisteredBwd, describe
from vjplint.rules.base import Rule
from vjplint.rules.helpers import rule_label
from vjplint.rules.structure._branch_outputs import branch_message, branch_test
from vjplint.rules.structure._fwd_out_messages import against_primal_message, other_node_message
from vjplint.rules.structure._tangent_carry import container


class FwdOutStructure(Rule):
    """## What it does
    Flags a custom_vjp fwd rule whose primal output (the first element of the pair it returns)
    has another structure than what the decorated function returns: one array where the primal
    returns a tuple of N, a tuple of M where it returns a tuple of N, or a tuple where it returns
    one array (`return (y,), res`; census row E16 of `docs/facts/jax-errors.md`), and a dict or a
    record of the module (`{"y": y}`) where every return of the primal is one array. Structures are read
    from the values vjplint infers (tuple literals, names bound to them, calls of module
    functions, elements unpacked from the primal's own result); where they are not shown the
    rule stays silent, except for `return (out,), res` where `out` is a call of the function
    itself, of its primal, or of the one function every return of the primal calls: a 1-element
    container around the output never has its structure; and `return res, out` with `out` such a
    call (or a name of fwd bound to one) and `res` not: the pair swapped. An element taken from the primal's own tuple result (`out, (s, m) = f(x)`,
    then `return out, ...`) never has the whole output's structure, whatever its kind.

    Where the primal's own structure is not shown (a primal written as `fwd(...)[0]`, whose
    output changes with fwd's), bwd is read instead: fwd's first element is a container (a tuple
    literal, a name bound to one: `return (out,), res`, or the swapped `return res, out`) while bwd
    uses its output cotangent as one array (`g.astype(...)`, `g @ w`, `-g`, `jnp.einsum(..., g)`,
    in bwd or a module function it passes `g` to). JAX hands bwd a cotangent of the output's
    structure, so one of the two is wrong; this is an error, and a warning that says "may" when
    the container is returned on one branch of fwd only (`if return_stats: return (out, stats), res`)
    and another return gives another output: only callers taking that branch fail.

    fwd's primal output built as another kind of pytree node than the function's output (a dict
    or a plain tuple where the function returns a tuple or a NamedTuple, dataclass or dict
    instance) differs too: JAX compares the nodes, not only the leaves.

    ## Why is this bad?
    JAX requires fwd's first element to look like the full output of the decorated function.
    Measured on JAX 0.10.2 (docs/facts/structure.md): under `grad(jit(f))` (a jitted function
    differentiated from outside) it raises

        TypeError: Custom VJP fwd rule f_fwd for function f must produce a pair (list or tuple
        of length two) where the first element represents the primal output (equal to the
        output of the custom_vjp-decorated function f) ...

    and under a plain `grad` the function silently changes its output structure: `f(x)[0]` is
    then the first row of an array instead of the first output, and the gradient is wrong
    (flash-attention-jax#7), or `f(x)[2]` raises IndexError.

    ## Example
    ```python
    @jax.custom_vjp
    def attend(s):
        p = jax.nn.softmax(s)
        return p, jnp.max(s)

    def attend_fwd(s):
        p, m = attend(s)
        return p, p        # primal output: one array, not (p, m)
    ```

    ## Use instead
    ```python
    def attend_fwd(s):
        p, m = attend(s)
        return (p, m), p
    ```
    or decorate a function that returns only the output you differentiate.

    ## Fix safety
    No fix: either fwd or the primal must change, and bwd's cotangent follows.
    """

    CODE = "VJP318"
    NAME = "fwd-out-structure"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)
    APIS = frozenset({"jax"})
    KINDS = frozenset({"vjp"})

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x), jnp.cos(x), x

def f_fwd(x):
    out = f(x)
    return out[0], x

def f_bwd(x, g):
    return (g[0] * jnp.cos(x),)

f.defvjp(f_fwd, f_bwd)
''', '''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x), jnp.cos(x), x

def f_fwd(x):
    a, b, c = f(x)
    return (a, b), x

def f_bwd(x, g):
    return (g[0] * jnp.cos(x),)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x), jnp.cos(x), x

def f_fwd(x):
    out = f(x)
    return out, x

def f_bwd(x, g):
    return (g[0] * jnp.cos(x) - g[1] * jnp.sin(x) + g[2],)

f.defvjp(f_fwd, f_bwd)
''']

    def check(self) -> None:
        self._seen: Set[ast.AST] = set()
        self._bwds: Optional[Dict[CustomDerivative, List[RegisteredBwd]]] = None  # the module's, by derivative

    def check_derivative(self, d: CustomDerivative) -> None:
        self._against_primal(d)
        self._cotangent_used_as_array(d)
        self._other_node(d)

    def _other_node(self, d: CustomDerivative) -> None:
        """fwd's primal output is another kind of pytree node than the function's (a tuple for a
        NamedTuple, a dict for a tuple): JAX compares the nodes, not only the leaves."""
        returns = self.model.facts.returns_of(d.primal) if d.primal else []
        made = {container(self.model, v) for _, v in returns}
        want = made.pop() if len(made) == 1 else None
        if want is None and returns and all(self.model.facts.not_a_sequence(v, d.primal) == "an array" for _, v in returns):
            want = ("array", "one array")  # a dict or record around it is another node (a tuple: `_against_primal`)
        for reg, fwd, _ in self.model.facts.checked_vjp_rules(d) if want is not None else ():
            if fwd is None or fwd.node is None or not self.model.facts.registered_here(d, reg.node):
                continue
            for _, value in self.model.facts.returns_of(fwd.node):
                if not (isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2) or value in self._seen or \
                        value.elts[0] in self._seen:
                    continue
                got = container(self.model, value.elts[0])
                if got is None or got[0] == want[0] or {got[0], want[0]} == {"tuple", "list"} or \
                        want[0] == "array" and got[0] in ("tuple", "list"):
                    continue  # tuple against list: VJP319
                self._seen.add(value.elts[0])
                self.report(value.elts[0], other_node_message(rule_label(fwd, 'fwd'), self.quote(value.elts[0], 40),
                                                              got[1], want[1], d.name))

    def _against_primal(self, d: CustomDerivative) -> None:
        primal = self.model.facts.primal_structure(d)
        if primal is None:
            self._wrapped_own_output(d)
            return
        expected, why_primal = primal
        for reg, fwd, _ in self.model.facts.checked_vjp_rules(d):
            if fwd is None or fwd.node is None or not self.model.facts.registered_here(d, reg.node):
                continue
            for out in self.model.facts.fwd_outputs(d, fwd.node):
                got = out.structure
                if out.node in self._seen or got == expected:
                    continue
                if got[0] != ARRAY and expected[0] != ARRAY and got[1] == expected[1]:
                    continue  # tuple vs list of the same length: VJP319
                if expected[0] == ARRAY and got[0] == ELEMENT:
                    continue  # an element of the primal's own result is then an array too
                self._seen.add(out.node)
                self.report(out.node, against_primal_message(rule_label(fwd, 'fwd'), describe(got), out.why, why_primal,
                                                             describe(expected), expected[0] == ARRAY, d.name))

    def _cotangent_used_as_array(self, d: CustomDerivative) -> None:
        """fwd's primal output is a container while bwd uses the output cotangent as one array:
        JAX hands bwd a cotangent of the output's structure, so one of the two is wrong."""
        if self._bwds is None:  # once per module, not a pass over every derivative's rules per derivative
            self._bwds = {}
            for reg in self.model.facts.registered_bwds():
                self._bwds.setdefault(reg.d, []).append(reg)
        for reg in self._bwds.get(d, ()):
            if reg.fwd is None or reg.fwd.node is None:
                continue
            use = self.model.facts.used_as_array(reg.bwd.node, reg.params[-1])
            if use is None:
                continue
            outs = self.model.facts.fwd_outputs(d, reg.fwd.node)
            # another return of fwd gives no such container: the container comes from one branch only
            containers = {o.node for o in outs if o.structure[0] not in (ARRAY, ELEMENT)}
            single = any(isinstance(v, ast.Tuple) and len(v.elts) == 2 and v.elts[0] not in containers
                         for _, v in self.model.facts.returns_of(reg.fwd.node))
            for out in outs:
                if out.structure[0] in (ARRAY, ELEMENT) or out.node in self._seen:
                    continue
                self._seen.add(out.node)
                g = reg.params[-1]
                inside = self.model.index.enclosing_function(use)
                where = f" in `{inside.name}`" if inside is not reg.bwd.node and \
                    isinstance(inside, (ast.FunctionDef, ast.AsyncFunctionDef)) else ""
                test = branch_test(self.model, out.node, reg.fwd.node) if single else None
                if test is not None:  # true only for the callers taking that branch: a warning that says "may"
                    self.report(out.node, branch_message(self.model, d, reg, out, test, use, where),
                                severity=Severity.WARNING)
                    continue
                self.report(out.node, f"{rule_label(reg.fwd, 'fwd')} returns {describe(out.structure)} as its primal "
                                      f"output ({out.why}), so JAX hands bwd a cotangent `{g}` of that structure, but "
                                      f"{rule_label(reg.bwd, 'bwd')} uses `{g}` as one array (`{self.quote(use, 40)}`{where}, "
                                      f"line {use.lineno}): differentiating `{d.name}` raises a TypeError there "
                                      f"(`... requires ndarray or scalar arguments, got <class 'tuple'>`, `unsupported "
                                      f"operand type(s)`) or where a caller uses the container as an array; return the "
                                      f"output itself as fwd's first element (the pair is `(output, residuals)`), or "
                                      f"unpack `{g}` in bwd if the output really is a container", severity=Severity.ERROR)

    def _wrapped_own_output(self, d: CustomDerivative) -> None:
        """`return (out,), res` where `out` is what the decorated function returns (a call of it, of
        its primal, or of the one function every return of the primal calls): whatever `out` is,
        a 1-element container around it has another structure."""
        if d.primal is None:
            return
        callees = {ast.dump(v.func) for _, v in self.model.facts.returns_of(d.primal) if isinstance(v, ast.Call)}
        returns = [v for _, v in self.model.facts.returns_of(d.primal)]
        own = {d.name, getattr(d.primal, "name", d.name)}
        for reg, fwd, _ in self.model.facts.checked_vjp_rules(d):
            if fwd is None or fwd.node is None or not self.model.facts.registered_here(d, reg.node):
                continue
            def same(e: ast.expr) -> bool:  # what the decorated function returns
                inner = self._bound(fwd.node, e)
                name = inner.func.id if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) else ""
                return isinstance(inner, ast.Call) and (name in own or (
                    len(callees) == 1 and all(isinstance(r, ast.Call) for r in returns) and ast.dump(inner.func) in callees))

            for _, value in self.model.facts.returns_of(fwd.node):
                if not (isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == 2):
                    continue
                first = value.elts[0]
                wrapped = isinstance(first, (ast.Tuple, ast.List)) and len(first.elts) == 1 and same(first.elts[0])
                second = value.elts[1]
                mentions = {ast.dump(n) for n in ast.walk(first) if isinstance(n, (ast.Name, ast.Call))}
                if first not in self._seen and not wrapped and same(second) and not same(first) and \
                        ast.dump(second) not in mentions and \
                        ast.dump(first) != ast.dump(value.elts[1]) and not isinstance(first, ast.Starred):
                    self._seen.add(first)
                    self.report(value, f"{rule_label(fwd, 'fwd')} returns `{self.quote(value, 50)}`: its second element "
                                       f"`{self.quote(value.elts[1], 30)}` is what `{d.name}` returns and its first is not, "
                                       f"so the pair looks swapped; JAX takes the first element as the primal output and "
                                       f"the second as the residuals, so differentiating `{d.name}` raises (`Custom VJP "
                                       f"fwd rule ... must produce a pair ... (equal to the output of the "
                                       f"custom_vjp-decorated function {d.name})`, or bwd receives the output as its "
                                       f"residuals); return `(output, residuals)`")
                    continue
                if not (isinstance(first, (ast.Tuple, ast.List)) and len(first.elts) == 1):
                    continue
                inner = self._bound(fwd.node, first.elts[0])
                if not isinstance(inner, ast.Call) or first in self._seen:
                    continue
                if same(first.elts[0]):
                    self._seen.add(first)
                    self.report(first, f"{rule_label(fwd, 'fwd')} returns `{self.quote(first, 40)}` as its primal output, "
                                       f"a 1-element {'tuple' if isinstance(first, ast.Tuple) else 'list'} around "
                                       f"`{self.quote(inner, 30)}`, which is what `{d.name}` returns: JAX needs fwd's "
                                       f"first element to have the decorated function's output structure, so "
                                       f"differentiating `{d.name}` raises `TypeError: Custom VJP fwd rule ... must "
                                       f"produce a pair ... (equal to the output of the custom_vjp-decorated function "
                                       f"{d.name})` or gives `grad` a tuple output; return "
                                       f"`{self.quote(first.elts[0], 30)}` itself as the first element")

    def _bound(self, fn, expr: ast.expr) -> ast.expr:
        """The value a name of `fn` is bound to once (`y = f(x)`), else `expr`."""
        if not isinstance(expr, ast.Name):
            return expr
        values = [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
                  and isinstance(n.targets[0], ast.Name) and n.targets[0].id == expr.id]
        return values[0] if len(values) == 1 else expr
