from __future__ import annotations

import ast
from typing import List, Optional

from vjplint.diagnostics import Severity
from vjplint.model.file_model import CustomDerivative, Registration
from vjplint.rules.base import Rule
from vjplint.syntax.notebook import MARKER
from vjplint.rules.registration._reach import (REGISTERING, NotRun, call_before, import_guarded, no_rule_error, not_run,
                                               uses_outside)


CELL = MARKER.split("{")[0]  # the line that opens each cell of a notebook read as one module


class RegistrationNotRun(Rule):
    """## What it does
    Flags a custom_vjp or custom_jvp whose every registration (`f.defvjp(fwd, bwd)`,
    `f.defjvp(jvp)`, `@f.defjvp`, `f.defjvps(...)`) sits where importing the module never runs
    it, and a call of the function that runs before its registration:
    - under `if __name__ == "__main__":`, or in a function that only that block calls (`main()`),
      while the function is used outside the block (a module-level function calls it, a layer
      holds it): importing the module never registers the rules (not in a notebook, whose
      kernel runs every cell as `__main__`);
    - under `if TYPE_CHECKING:` (false at run time), under a constant false test (`if False:`,
      `if 0:`), or under a module flag bound once to one (`USE_CUSTOM_GRAD = False` ...
      `if USE_CUSTOM_GRAD:`);
    - after a `return`, `raise`, `break` or `continue` in its block (a factory that returns the
      function before registering it);
    - in a private function (`_register()`) that nothing in the module calls;
    - after a call of the function that runs unconditionally in the same body (a module-level
      table computed with it, a factory that calls it before registering it);
    - as a warning ("may"), after an optional import in the body of a `try` whose handler
      swallows the `ImportError` without registering the function: where the module is
      missing, the function has no rules.

    The registration counts wherever it runs: a class body, a factory, a helper the module calls,
    the `else` of `if TYPE_CHECKING:`, a public function an importer may call, and in a run over
    several modules a registration in another module of the run.

    ## Why is this bad?
    A custom derivative checks for its rules when it is called, before anything else, so the
    first call raises in every mode, eager included (measured on JAX 0.10.2,
    fixtures/rules/VJP372):

        AttributeError: No VJP defined for custom_vjp function f using defvjp.

    (`No JVP defined for custom_jvp function f using defjvp.` for custom_jvp.) A smoke test in
    the `__main__` block passes, since running the file as a script does register the rules;
    every module that imports it gets the function without them.

    ## Example
    ```python
    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def loss(x):
        return f(x).sum()

    if __name__ == "__main__":
        f.defvjp(f_fwd, f_bwd)
        print(jax.grad(loss)(1.0))
    ```

    ## Use instead
    ```python
    f.defvjp(f_fwd, f_bwd)

    if __name__ == "__main__":
        print(jax.grad(loss)(1.0))
    ```

    ## Fix safety
    No fix: where the registration belongs (and whether a flag meant to switch the rules off
    should instead choose between two functions) is the author's to say.
    """

    CODE = "VJP372"
    NAME = "registration-not-run"
    SEVERITY = Severity.ERROR
    TRIGGERS = (b"defvjp", b"defjvp")

    INVALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)

def f_bwd(c, g):
    return (c * g,)

def loss(x):
    return f(x).sum()

if __name__ == "__main__":
    f.defvjp(f_fwd, f_bwd)
''']
    VALID = ['''
import jax
import jax.numpy as jnp

@jax.custom_vjp
def f(x):
    return jnp.sin(x)

def f_fwd(x):
    return jnp.sin(x), jnp.cos(x)

def f_bwd(c, g):
    return (c * g,)

f.defvjp(f_fwd, f_bwd)

def loss(x):
    return f(x).sum()
''']

    def check(self) -> None:
        external = self.model.facts.external
        for d in self.model.derivatives:
            regs = [r for r in d.registrations if r.method in REGISTERING]
            if not regs or d.api in ("equinox", "custom_gradient"):
                continue
            if external is not None and self.model.facts.is_top_level(d.anchor) and d.name in external.registered:
                continue  # another module of the run registers the rules too
            reasons = [not_run(self.model, d, reg) for reg in regs]
            if all(r is not None for r in reasons):
                self._never(d, [r for r in reasons if r is not None])
                continue
            guarded = [import_guarded(self.model, d, reg) for reg, why in zip(regs, reasons) if why is None]
            if all(g is not None for g in guarded):
                self._optional(d, [reg for reg, why in zip(regs, reasons) if why is None][0], guarded[0])  # type: ignore
                continue
            running = sorted((reg for reg, why in zip(regs, reasons) if why is None), key=_line)
            call = call_before(self.model, d, running[0])
            if call is not None:
                self.report(call, f"`{self.quote(call.func)}` is called here before its rules are registered "
                                  f"(`{d.name}.{running[0].method}` on line {_line(running[0])} runs after this "
                                  f"line in the same body), so this call raises {no_rule_error(d)}, eager "
                                  f"included; register the rules right after they are defined, before the "
                                  f"first call")

    def _optional(self, d: CustomDerivative, reg: Registration, guarded) -> None:
        """The only registration follows an optional import in a `try` whose handler swallows its failure."""
        try_node, imported = guarded
        if not uses_outside(self.model, d, try_node):
            return
        handler = next(h for h in try_node.handlers)
        self.report(_decorator(reg) if reg.as_decorator else reg.node,
                    f"`{d.name}.{reg.method}` runs only when `{self.quote(imported, 50)}` (line {imported.lineno}) "
                    f"succeeds: where that module is missing, the `except` on line {handler.lineno} swallows the "
                    f"failure and {d.label} `{d.name}` is left without its rules, so its first call may raise "
                    f"{no_rule_error(d)}; register the rules before the optional import, outside the `try`",
                    severity=Severity.WARNING)

    def _never(self, d: CustomDerivative, reasons: List[NotRun]) -> None:
        first = reasons[0]
        reg = first.registration
        spelled = f"`{'@' if reg.as_decorator else ''}{d.name}.{reg.method}`"
        if first.route == "script":
            if any(line.startswith(CELL) for line in self.model.lines):
                return  # a notebook: its kernel runs every cell with `__name__ == "__main__"`
            used = [u for u in uses_outside(self.model, d, first.guard)
                    if first.via is None or not any(a is first.via for a in self.model.index.ancestors(u))]
            if not used or any(r.route != "script" for r in reasons):
                return  # a script that uses the function only after registering it
            where = f"line {used[0].lineno}"  # type: ignore[attr-defined]
            fn = _function_name(self.model, used[0])
            where += f", in `{fn}`" if fn else ", at module level"
            inside = (f"inside `{first.via.name}` (line {first.via.lineno}), which only the "  # type: ignore
                      f"`if __name__ == \"__main__\":` block (line {first.guard.lineno}) calls"
                      if first.via is not None else
                      f"under `if __name__ == \"__main__\":` (line {first.guard.lineno})")  # type: ignore[attr-defined]
            why = (f"runs only {inside}, so only when this file is executed as a script, but `{d.name}` is used "
                   f"outside that block ({where}): importing the module never registers the rules, and "
                   f"the first call from an importer raises")
            advice = f"move {spelled} out of the `__main__` block, right after the rules are defined"
        elif first.route == "type-checking":
            why = (f"sits under `if TYPE_CHECKING:` (line {first.guard.lineno}), which is false when the code "  # type: ignore
                   f"runs, so the rules are never registered and the first call raises")
            advice = f"register the rules unconditionally (only imports belong under `TYPE_CHECKING`)"
        elif first.route == "false":
            text, line, value = first.flag  # type: ignore[misc]
            bound = f"`{text}` is bound once, to `{value}` (line {line})" if text != value else f"`{text}` is false"
            why = (f"sits under `{'while' if isinstance(first.guard, ast.While) else 'if'} {text}:` "
                   f"(line {first.guard.lineno}), which never runs: {bound}, so the rules are never registered "  # type: ignore
                   f"and the first call of `{d.name}` raises")
            advice = (f"register the rules unconditionally; to switch the custom rules off, choose between "
                      f"`{d.name}` and the plain function with the flag")
        elif first.route == "dead":
            ended = type(first.guard).__name__.lower()
            why = (f"follows the `{ended}` on line {first.guard.lineno} in the same block, so it never runs: "  # type: ignore
                   f"the rules are never registered and the first call of `{d.name}` raises")
            advice = f"move {spelled} before the `{ended}`"
        else:
            why = (f"runs only inside `{first.guard.name}` (line {first.guard.lineno}), which nothing in this "  # type: ignore
                   f"module calls, so the rules are never registered and the first call of `{d.name}` raises")
            advice = f"call `{first.guard.name}()` at module level, or register the rules there"  # type: ignore
        self.report(_decorator(reg) if reg.as_decorator else reg.node,
                    f"{spelled} (the {'only ' if len(reasons) == 1 else ''}registration of {d.label} `{d.name}`) "
                    f"{why} {no_rule_error(d)} in every mode, eager included; {advice}")


def _decorator(reg: Registration) -> ast.AST:
    """The `@f.defjvp` decorator of a registered rule."""
    decorators = getattr(reg.node, "decorator_list", [])
    return next((dec for dec in decorators if isinstance(dec, ast.Attribute) and dec.attr == reg.method), reg.node)


def _line(reg: Registration) -> int:
    return reg.node.lineno  # type: ignore[attr-defined]


def _function_name(model, node: ast.AST) -> Optional[str]:
    for ancestor in model.index.ancestors(node):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return ancestor.name
    return None
