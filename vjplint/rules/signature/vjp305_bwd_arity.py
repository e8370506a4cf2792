from __future__ import annotations

import ast

from vjplint.diagnostics import Severity
from vjplint.facts import plural
from vjplint.model.file_model import CustomDerivative
from vjplint.rules.base import Rule
from vjplint.rules.helpers import python_arity_error, rule_label


class BwdArity(Rule):
    """## What it does
    Checks that a custom_vjp's bwd rule accepts `len(nondiff_argnums) + 2` positional
    arguments: the nondiff values (in sorted position order), then the residuals, then the
    output cotangent. `*args`, extra parameters with defaults, `functools.partial` bindings
    and bound methods are taken into account.

    Each API's own protocol is used: `flax.nnx.custom_vjp` counts as JAX does, and in simple mode
    (`graph_updates=False` or `graph=False`, or a mode that is not a literal) fills a parameter
    named `updates_g` by keyword; `equinox.filter_custom_vjp` calls `bwd(residuals, grad_obj,
    perturbed, vjp_arg, *args)` (through its deprecated `defvjp(fwd, bwd)`, `bwd(residuals, g,
    vjp_arg, *args)`: a bwd kept from JAX's `bwd(res, g)` after a migration fails); the `vjp_fn` a `jax.custom_gradient` function returns takes the
    output cotangent only.

    ## Why is this bad?
    JAX calls `bwd(*nondiff_values, residuals, cotangent)`. With the wrong number of
    parameters, the backward pass fails with Python's own error, under grad only:

        TypeError: f_bwd() takes 2 positional arguments but 3 were given

    The usual causes are forgetting the nondiff arguments in front (or listing them when
    there are none), and splitting the residuals over several parameters.

    ## Example
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def clip(lo, x):
        return jnp.maximum(x, lo)

    def clip_bwd(res, g):        # JAX passes lo first
        ...
    ```

    ## Use instead
    ```python
    def clip_bwd(lo, res, g):
        ...
    ```

    ## Fix safety
    No fix.
    """

    CODE = "VJP305"
    NAME = "bwd-arity"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp", b"custom_gradient")

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x, y):
    return x * y

def f_fwd(x, y):
    return x * y, (x, y)

def f_bwd(x, y, g):
    return (g * y, g * x)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x, y):
    return x * y

def f_fwd(x, y):
    return x * y, (x, y)

def f_bwd(res, g, scale=1.0):
    x, y = res
    return (scale * g * y, scale * g * x)

f.defvjp(f_fwd, f_bwd)
''']

    def check(self) -> None:
        for d in self.model.derivatives:
            nondiff = self.model.facts.nondiff_positions(d)
            if nondiff is None:
                continue
            n = len(nondiff) + 2
            sig = self.model.facts.primal_signature(d)
            nondiff_names = [sig.positional[i] if i < len(sig.positional) else f"arg{i}" for i in nondiff] \
                if sig is not None else [f"arg{i}" for i in nondiff]
            for _, _, bwd in self.model.facts.checked_vjp_rules(d):
                arity = self.model.facts.bwd_arity(d, bwd)
                if bwd is None or bwd.node is None or arity is None or arity.accepts(n) and not arity.kwonly_required:
                    continue
                call = ", ".join([*nondiff_names, "residuals", "cotangent"])
                if nondiff:
                    listed = ", ".join(f"`{name}`" for name in nondiff_names)
                    order = (f"the nondiff argument{'s' if len(nondiff) > 1 else ''} {listed} first (sorted by "
                             f"position), then the residuals, then the output cotangent")
                else:
                    order = f"the residuals, then the output cotangent (`{d.name}` has no nondiff arguments)"
                error = python_arity_error(getattr(bwd.called, "name", "<lambda>"), arity, n)
                if arity.accepts(n):  # only a required keyword-only parameter is wrong
                    listed = ", ".join(f"`{k}`" for k in arity.kwonly_required)
                    plural_s = "s" if len(arity.kwonly_required) > 1 else ""
                    takes = f"has the required keyword-only parameter{plural_s} {listed}"
                    given = f"{plural(n, 'positional argument')} only"
                else:
                    takes = f"takes {arity.count_text()} {arity.params_text()}{arity.binding_text()}"
                    given = plural(n, "argument")
                whose = "" if d.api == "jax" else f" of {d.label} `{d.name}`"
                message = (f"{rule_label(bwd, 'bwd')}{whose} {takes}, but {self.model.facts.caller(d)} calls it with "
                           f"{given}, bwd({call}): {order}; differentiating `{d.name}` raises `{error}`")
                self.report(bwd.expr if isinstance(bwd.expr, ast.Call) else self.model.name_anchor(bwd.node),
                            message)
        for d in self.model.derivatives:
            if d.api == "equinox":
                self._equinox(d)
            elif d.api == "custom_gradient":
                self._custom_gradient(d)

    def _equinox(self, d: CustomDerivative) -> None:
        """equinox calls `bwd(residuals, grad_obj, perturbed, vjp_arg, *args)`."""
        mismatch = self.model.facts.equinox_arity_mismatch(d, "bwd")
        if mismatch is None:
            return
        bwd, arity, n, sig = mismatch
        rules = self.model.facts.equinox_rules(d)
        legacy = rules is not None and rules.legacy
        call = ", ".join(["residuals", "g" if legacy else "grad_obj", *([] if legacy else ["perturbed"]), *sig.positional])
        error = python_arity_error(getattr(bwd.called, "name", "<lambda>"), arity, n)
        who = f"equinox's deprecated `{d.name}.defvjp` calls" if legacy else "equinox calls"
        then = "the residuals, the cotangent, then the primal's arguments" if legacy else \
            "the residuals, the cotangent, `perturbed`, then the primal's arguments"
        self.report(self.model.name_anchor(bwd.node),
                    f"{rule_label(bwd, 'bwd')} of {d.label} `{d.name}` takes {arity.count_text()} "
                    f"{arity.params_text()}{arity.binding_text()}, but {who} it with "
                    f"{plural(n, 'positional argument')}, bwd({call}): {then} (not JAX's `bwd(res, g)`); "
                    f"differentiating `{d.name}` raises `{error}`")

    def _custom_gradient(self, d: CustomDerivative) -> None:
        """The vjp function a custom_gradient returns is called with one cotangent."""
        for pair in self.model.facts.custom_gradient_returns(d):
            vjp = pair.vjp
            arity = self.model.facts.rule_arity(vjp) if vjp is not None else None
            if vjp is None or vjp.node is None or arity is None or (arity.accepts(1) and not arity.kwonly_required):
                continue
            label = "the vjp lambda" if isinstance(vjp.node, ast.Lambda) else f"vjp function `{vjp.name}`"
            error = python_arity_error(getattr(vjp.called, "name", "<lambda>"), arity, 1)
            self.report(vjp.node if isinstance(vjp.node, ast.Lambda) else self.model.name_anchor(vjp.node),
                        f"{label} returned by jax.custom_gradient `{d.name}` takes {arity.count_text()} "
                        f"{arity.params_text()}, but JAX calls it with the output cotangent only, vjp_fn(g); "
                        f"differentiating `{d.name}` raises `{error}`; give it one parameter and return one "
                        f"cotangent per argument of `{d.name}`")
