from __future__ import annotations

import ast

from vjplint.diagnostics import Severity
from vjplint.facts import Arity, plural
from vjplint.model.file_model import CustomDerivative, RuleFunction
from vjplint.rules.base import Rule
from vjplint.rules.helpers import python_arity_error, rule_label


class FwdArity(Rule):
    """## What it does
    Checks that a custom_vjp's fwd rule accepts as many positional arguments as the primal
    function has positional parameters: nondiff positions included, parameters with defaults
    included. `*args` in fwd accepts anything; extra fwd parameters with defaults are fine;
    `functools.partial(fwd, a)` and bound methods (`self.fwd`) are counted after binding.
    When the primal itself takes `*args`, the count comes from the call sites in the file
    (only when they agree and the function cannot be called from elsewhere); otherwise only a
    fwd that cannot take even the fixed parameters is reported.

    `flax.nnx.custom_vjp` and linen's `nn.custom_vjp` count as JAX does (linen's `mdl` is
    position 0); `equinox.filter_custom_vjp` calls `fwd(perturbed, vjp_arg, *args)`, one more
    than the primal's arguments (checked when the primal has neither defaults nor `*args`).

    ## Why is this bad?
    JAX binds the call to the primal's signature, fills in defaults
    (`inspect.signature(f).bind(...).apply_defaults()`), and calls fwd with **all** the
    arguments, positionally, in their original order. A fwd that leaves out the nondiff
    arguments or a defaulted one fails as soon as anything differentiates the function:

        TypeError: f_fwd() takes 1 positional argument but 2 were given

    Eager calls, `jit` and `vmap` never run fwd, so tests that do not take gradients pass.

    ## Example
    ```python
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def scale(n, x):
        return n * x

    def scale_fwd(x):          # n is missing
        return n * x, None
    ```

    ## Use instead
    ```python
    def scale_fwd(n, x):
        return n * x, None
    ```

    ## Fix safety
    No fix: the body has to use the new parameter.
    """

    CODE = "VJP303"
    NAME = "fwd-arity"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"custom_vjp",)

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x, y=2.0):
    return x * y

def f_fwd(x):
    return x * 2.0, x

def f_bwd(x, g):
    return (2.0 * g, None)

f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x, y=2.0):
    return x * y

def f_fwd(*args):
    return f(*args), args

def f_bwd(args, g):
    return (args[1] * g, args[0] * g)

f.defvjp(f_fwd, f_bwd)
''']

    def check(self) -> None:
        for d in self.model.derivatives:
            counts = self.model.facts.primal_arg_counts(d)
            sig = self.model.facts.primal_signature(d)
            if sig is None or self.model.facts.nondiff_positions(d) is None:
                continue
            for _, fwd, _ in self.model.facts.checked_vjp_rules(d):
                arity = self.model.facts.rule_arity(fwd)
                if fwd is None or arity is None:
                    continue
                if counts is not None:
                    wrong = sorted(n for n in counts if not arity.accepts(n))
                    if wrong or arity.kwonly_required:
                        self._report(d, fwd, arity, (wrong or sorted(counts))[0])
                elif arity.maximum is not None and arity.maximum < len(sig.positional) or arity.kwonly_required:
                    self._report(d, fwd, arity, len(sig.positional), at_least=True)
        for d in self.model.derivatives:
            if d.api == "equinox":
                self._equinox(d)

    def _equinox(self, d: CustomDerivative) -> None:
        """equinox calls `fwd(perturbed, vjp_arg, *args)`: one more than the primal's arguments."""
        mismatch = self.model.facts.equinox_arity_mismatch(d, "fwd")
        if mismatch is None:
            return
        fwd, arity, n, sig = mismatch
        rules = self.model.facts.equinox_rules(d)
        if rules is not None and rules.legacy:  # the deprecated `defvjp`: JAX's fwd(vjp_arg, *args)
            error = python_arity_error(getattr(fwd.called, "name", "<lambda>"), arity, n)
            self.report(self.model.name_anchor(fwd.node),
                        f"{rule_label(fwd, 'fwd')} of {d.label} `{d.name}` takes {arity.count_text()} "
                        f"{arity.params_text()}{arity.binding_text()}, but equinox's deprecated `{d.name}.defvjp` "
                        f"calls it with the primal's arguments, fwd({', '.join(sig.positional)}); differentiating "
                        f"`{d.name}` raises `{error}`")
            return
        names = ["perturbed", *sig.positional]
        error = python_arity_error(getattr(fwd.called, "name", "<lambda>"), arity, n)
        self.report(self.model.name_anchor(fwd.node),
                    f"{rule_label(fwd, 'fwd')} of {d.label} `{d.name}` takes {arity.count_text()} "
                    f"{arity.params_text()}{arity.binding_text()}, but equinox calls it with "
                    f"{plural(n, 'positional argument')}, fwd({', '.join(names)}): `perturbed` (a bool per leaf of "
                    f"`{sig.positional[0]}`) first, then the primal's arguments; differentiating `{d.name}` raises "
                    f"`{error}`; give fwd the parameters ({', '.join(names)})")

    def _report(self, d: CustomDerivative, fwd: RuleFunction, arity: Arity, k: int, at_least: bool = False) -> None:
        sig = self.model.facts.primal_signature(d)
        nondiff = self.model.facts.nondiff_positions(d) or ()
        assert sig is not None and fwd.node is not None
        names = sig.positional[:k] + [f"{sig.vararg}[{i}]" for i in range(k - len(sig.positional))]
        notes = []
        if nondiff:
            notes.append(f"nondiff {_list(names[i] for i in nondiff if i < len(names))} included")
        defaulted = sig.positional[len(sig.positional) - sig.n_defaults:]
        if defaulted:
            notes.append(f"the default{'s' if len(defaulted) > 1 else ''} of {_list(defaulted)} filled in")
        notes_bound = arity.binding_text()
        how = "at least " if at_least else ""
        error = python_arity_error(getattr(fwd.called, "name", "<lambda>"), arity, k)
        note = f"; {'; '.join(notes)}" if notes else ""
        args = f"{how}the {plural(k, 'positional argument')} of `{d.name}` ({', '.join(names)}{note})"
        if arity.accepts(k) and arity.kwonly_required:
            listed = _list(arity.kwonly_required)
            message = (f"{rule_label(fwd, 'fwd')} has the required keyword-only parameter"
                       f"{'s' if len(arity.kwonly_required) > 1 else ''} {listed}, but {self.model.facts.caller(d)} passes only {args}, so "
                       f"differentiating `{d.name}` raises `{error}`; give {listed} a default or remove it")
        else:
            message = (f"{rule_label(fwd, 'fwd')} takes {arity.count_text()} {arity.params_text()}{notes_bound}, but "
                       f"{self.model.facts.caller(d)} calls it with {args}, so differentiating `{d.name}` raises `{error}`; give fwd the "
                       f"parameters ({', '.join(names)}), in the primal's order")
        # A partial is reported where it binds; a def or lambda where it is written.
        self.report(fwd.expr if isinstance(fwd.expr, ast.Call) else self.model.name_anchor(fwd.node), message)


def _list(names) -> str:
    return ", ".join(f"`{n}`" for n in names)
