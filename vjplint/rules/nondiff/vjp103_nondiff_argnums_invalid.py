from __future__ import annotations

import ast
from typing import Optional

from vjplint.diagnostics import Applicability, Severity
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.base import Rule
from vjplint.model.semantic import constant_value


class NondiffArgnumsInvalid(Rule):
    """## What it does
    Checks that `nondiff_argnums` is a tuple or list of non-negative int literals below the
    number of positional parameters, and that every `nondiff_argnames` entry names a
    positional-or-keyword parameter.

    ## Why is this bad?
    `custom_vjp`/`custom_jvp` validate almost nothing when decorating:
    - a bare int `0` is silently treated as "no nondiff arguments"; a bare int `1` raises
      `TypeError: 'int' object is not iterable` at import;
    - a negative index is not normalised: the argument is both static and differentiable, and
      gradients break (`UnexpectedTracerError`, or a bwd structure error);
    - an index past the last parameter raises `IndexError` at every call; a float or str index
      raises `TypeError` at every call; `True` acts as index 1;
    - an unknown name in `nondiff_argnames` is silently ignored.

    `flax.nnx.custom_vjp` in its default mode (graph=True, graph_updates=True) refuses a position
    given twice (`nondiff_argnums=(1, 1)`, or an int and a `DiffState` for one position):
    `ValueError: argnum 1 is repeated in nondiff_argnums` when decorating (census row E53 of
    `docs/facts/jax-errors.md`). It also refuses an nnx
    graph node (a Module, even one without arrays, a Variable, a State) in an int
    `nondiff_argnums` slot: `TypeError: Passing integers to nondiff_argnums for graph nodes
    arguments in custom_vjp is not supported.` at every call, eager included. Reported at a call
    that passes one (a constructor call, `nnx.state(...)`, a part of `nnx.split(...)`, or a name
    bound once to one of those); `graph_updates=False` accepts it.

    ## Example
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=0)
    def f(n, x): ...
    ```

    ## Use instead
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def f(n, x): ...
    ```

    ## Fix safety
    A bare int `k >= 1` is wrapped as `(k,)` (safe: the code crashed before). A bare `0` is
    wrapped too, but unsafely: today JAX ignores it, so the fix changes behaviour to what the
    code says. A negative index written in the tuple or list is rewritten to its positive
    equivalent (unsafe: JAX used the argument both ways before); one inside a named constant is
    not rewritten. Each is proven on JAX in `fixtures/fix_small/`.
    """

    CODE = "VJP103"
    NAME = "nondiff-argnums-invalid"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_jvp")
    IN_STUBS = True  # the argnums are wrong in the declaration itself
    FIX = "normalise the index"
    INVALID = ["import jax\nfrom functools import partial\n@partial(jax.custom_vjp, nondiff_argnums=1)\n"
               "def f(x, n):\n    return x * n\n"]
    VALID = ["import jax\nfrom functools import partial\n@partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
             "def f(x, n):\n    return x * n\n"]

    def check_derivative(self, d: CustomDerivative) -> None:
        if d.api == "linen" and 0 in d.nondiff and "nondiff_argnums" in d.keywords:
            self._linen_mdl(d, d.keywords["nondiff_argnums"])
        if d.api == "nnx" and d.mode == "default" and d.nondiff:
            self._nnx_graph_nodes(d)
        if d.api == "nnx" and d.mode == "default" and "nondiff_argnums" in d.keywords:
            self._nnx_repeated(d, d.keywords["nondiff_argnums"])
        if d.api == "nnx" and "nondiff_argnums" in d.keywords:
            self._nnx_argnums(d, d.keywords["nondiff_argnums"])
        if d.api != "jax":
            return  # measured on JAX's own validation; nnx and linen validate on their own
        if "nondiff_argnums" in d.keywords:
            self._argnums(d, d.keywords["nondiff_argnums"])
        if "nondiff_argnames" in d.keywords:
            self._argnames(d, d.keywords["nondiff_argnames"])

    def _linen_mdl(self, d: CustomDerivative, node: ast.expr) -> None:
        """linen counts the module as position 0 and passes its params there, traced under grad."""
        element = next((e for e in getattr(node, "elts", []) if constant_value(self.model.index, e) == 0), node)
        sig = d.signature
        mdl = f"`{sig.positional[0]}`" if sig is not None and sig.positional else "the module"
        self.report(element, f"nondiff_argnums of {d.label} `{d.name}` contains 0, which is {mdl}: linen counts "
                             f"the module as position 0 and passes its `grad_vars` collections there, traced under "
                             f"grad, so JAX raises UnexpectedTracerError; count the arguments after the module "
                             f"from 1")

    def _nnx_graph_nodes(self, d: CustomDerivative) -> None:
        """nnx's default mode refuses a Module, a Variable or a State in an int nondiff slot, at
        every call (docs/facts/nnx-nondiff.md)."""
        sig = d.signature
        for site in d.call_sites:
            call = site.call
            for position in sorted(d.nondiff):
                if any(isinstance(a, ast.Starred) for a in call.args[:position + 1]) or position >= len(call.args):
                    continue
                arg = call.args[position]
                found = self.model.facts.graph_node(arg, self.model.index.scope_of(call))
                if found is None:
                    continue
                name = f"`{sig.positional[position]}` " if sig is not None and position < len(sig.positional) else ""
                self.report(arg, f"{found}, is passed to {name}(position {position}) of {d.label} `{d.name}`, an int "
                                 f"nondiff_argnums slot: in nnx's default mode (graph=True, graph_updates=True) "
                                 f"flax raises `TypeError: Passing integers to nondiff_argnums for graph nodes "
                                 f"arguments in custom_vjp is not supported.` at every call, eager included; "
                                 f"declare `{d.name}` with `graph_updates=False` (whose int slots accept graph "
                                 f"nodes) or pass it as a differentiable argument")

    def _nnx_argnums(self, d: CustomDerivative, node: ast.expr) -> None:
        """nnx iterates `nondiff_argnums` (a bare int, even 0, raises when decorating) and indexes the
        arguments with each entry (one past the parameters raises at the call), in every mode."""
        value = constant_value(self.model.index, node)
        sig = d.signature
        if type(value) is int:
            self.report(node, f"nondiff_argnums of {d.label} `{d.name}` is the bare int `{value}` (a lost comma?): "
                              f"flax raises `TypeError: 'int' object is not iterable` when decorating; write "
                              f"`({value},)`", fix=self.replacing(node, f"({value},)", Applicability.SAFE,
                                                                  f"Write `({value},)`"))
        elif isinstance(value, tuple) and sig is not None and not sig.vararg:
            for item, element in zip(value, node.elts if isinstance(node, (ast.Tuple, ast.List)) else []):
                if type(item) is int and item >= len(sig.positional):
                    self.report(element, f"nondiff_argnums of {d.label} `{d.name}` names position {item}, but "
                                         f"`{d.name}` takes {len(sig.positional)} positional parameters: flax "
                                         f"raises `IndexError: tuple index out of range` at every call; count "
                                         f"positions from 0")

    def _nnx_repeated(self, d: CustomDerivative, node: ast.expr) -> None:
        """nnx's default mode refuses a position given twice (an int, or a `DiffState`'s argnum),
        when decorating; JAX's own custom_vjp makes a set of them and does not mind."""
        seen = set()
        for element in node.elts if isinstance(node, (ast.Tuple, ast.List)) else []:
            entry = element
            if isinstance(element, ast.Call) and element.args and (
                    self.model.index.qualname(element.func) or "").endswith("DiffState"):
                entry = element.args[0]
            index = constant_value(self.model.index, entry)
            if type(index) is not int:
                continue
            if index in seen:
                self.report(element, f"nondiff_argnums of {d.label} `{d.name}` gives position {index} twice: in "
                                     f"nnx's default mode flax raises `ValueError: argnum {index} is repeated in "
                                     f"nondiff_argnums` when decorating; give each position once")
            seen.add(index)

    def _argnums(self, d: CustomDerivative, node: ast.expr) -> None:
        value = constant_value(self.model.index, node)
        sig = d.signature
        k = len(sig.positional) if sig is not None else None
        limit = None if sig is None or sig.vararg else k
        what = f"custom_{d.kind} `{d.name}`"
        if isinstance(value, bool) or value is None and isinstance(node, ast.Constant):
            self.report(node, f"nondiff_argnums of {what} is `{self.quote(node)}`, not a tuple of indices: "
                              f"write a tuple of ints such as `(0,)`")
            return
        if type(value) is int:
            if value == 0:
                self.report(node, f"nondiff_argnums of {what} is the bare int `0`, which JAX silently treats "
                                  f"as no nondiff arguments; write `(0,)`",
                            fix=self.replacing(node, "(0,)", Applicability.UNSAFE, "Write `(0,)`"))
            else:
                self.report(node, f"nondiff_argnums of {what} is the bare int `{value}`: JAX raises "
                                  f"`TypeError: 'int' object is not iterable` when decorating; write `({value},)`",
                            fix=self.replacing(node, f"({value},)", Applicability.SAFE, f"Write `({value},)`"))
            return
        if isinstance(value, str):
            self.report(node, f"nondiff_argnums of {what} is the string {value!r}: JAX raises TypeError at every "
                              f"call; use `nondiff_argnames={value!r}` or an index tuple")
            return
        if not isinstance(value, (tuple, list)):
            return
        elements = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node] * len(value)
        for item, element in zip(value, elements):
            self._element(d, item, element, k, limit, what)

    def _element(self, d: CustomDerivative, item: object, element: ast.expr, k: Optional[int],
                 limit: Optional[int], what: str) -> None:
        if isinstance(item, bool):
            self.report(element, f"nondiff_argnums of {what} contains `{item}`, which JAX uses as the index "
                                 f"{int(item)}; write the int")
        elif isinstance(item, (float, str, bytes)) or item is None:
            self.report(element, f"nondiff_argnums of {what} contains `{self.quote(element)}`, not an int: JAX "
                                 f"raises TypeError at every call")
        elif isinstance(item, int) and item < 0:
            fixed = (k + item) if k is not None and -k <= item else None
            hint = f"; write `{fixed}`" if fixed is not None else ""
            self.report(element, f"nondiff_argnums of {what} contains the negative index `{item}`, which JAX does "
                                 f"not normalise: the argument ends up both static and differentiable and "
                                 f"gradients fail{hint}",
                        fix=self.replacing(element, str(fixed), Applicability.UNSAFE, f"Write `{fixed}`")
                        if fixed is not None and self._literal_entry(element) else None)
        elif isinstance(item, int) and limit is not None and item >= limit:
            self.report(element, f"nondiff_argnums of {what} contains `{item}`, but `{d.name}` has only {k} "
                                 f"positional parameter{'s' if k != 1 else ''}: JAX raises IndexError at every call")

    def _literal_entry(self, element: ast.expr) -> bool:
        """An entry written in a tuple/list literal: replacing it edits that entry alone (a
        named constant such as `ARGS = (0, -1)` would be replaced whole)."""
        return isinstance(self.model.index.parent(element), (ast.Tuple, ast.List))

    def _argnames(self, d: CustomDerivative, node: ast.expr) -> None:
        value = constant_value(self.model.index, node)
        names = (value,) if isinstance(value, str) else value
        if not isinstance(names, (tuple, list)) or d.primal is None:
            return
        allowed = [a.arg for a in d.primal.args.args]
        posonly = [a.arg for a in d.primal.args.posonlyargs]
        elements = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node] * len(names)
        for name, element in zip(names, elements):
            if not isinstance(name, str) or name in allowed:
                continue
            if name in posonly:
                why = "is positional-only, and JAX only honours positional-or-keyword parameters"
            else:
                why = "is not a positional-or-keyword parameter"
            self.report(element, f"nondiff_argnames of custom_{d.kind} `{d.name}` names `{name}`, which {why}: "
                                 f"JAX silently ignores it")
