from __future__ import annotations

import ast
import re
from typing import List, Optional

from vjplint.diagnostics import Applicability, Edit, Position, Severity
from vjplint.syntax.positions import byte_to_char
from vjplint.rules.base import Rule
from vjplint.model.semantic import constant_value

FLAG = "jax_use_direct_linearize"
ENV = "JAX_USE_DIRECT_LINEARIZE"
# `jax.config`, `from jax import config`, `from jax._src import config`, `jax._src.config.config`.
CONFIG_OBJECTS = frozenset({"jax.config", "jax._src.config", "jax._src.config.config", "jax.config.config"})
ENV_SETTERS = frozenset({"os.putenv", "os.environ.setdefault"})
# absl spellings: --flag, --flag=value, --noflag (also with a single dash).
ABSL = re.compile(r"^--?(no)?" + FLAG + r"(=.*)?$", re.DOTALL)


class DirectLinearizeFlag(Rule):
    """## What it does
    Flags every setting of `jax_use_direct_linearize`: `jax.config.update(...)` (however
    `config` was imported), the `config.use_direct_linearize(...)` context manager, the
    environment variable `JAX_USE_DIRECT_LINEARIZE` (`os.environ[...] = ...`,
    `os.environ.setdefault`, `os.putenv`, env mappings) and the absl flag
    `--jax_use_direct_linearize` in argument lists.

    ## Why is this bad?
    The flag is dead: JAX 0.10.2 still defines it (default True) but reads it nowhere. `grad`,
    `vjp` and `jacrev` always linearize with `LinearizeTracer`, whatever the flag says. Setting it
    is accepted silently and changes nothing, so code that relies on it (to get the old
    JVP-then-partial-eval path, or to work around a bug) does not get what it asks for.

    ## Example
    ```python
    jax.config.update("jax_use_direct_linearize", False)
    ```

    ## Use instead
    Delete the setting. If code depended on the old behaviour (for example it tests for
    `JVPTracer` under `grad`), fix that code instead (see VJP402).

    ## Fix safety
    Deleting a lone statement (`config.update(...)`, `os.environ[...] = ...`,
    `os.environ.setdefault(...)`, `os.putenv(...)`) is safe: it has no effect. When it is the only
    statement of its block it becomes `pass`. No fix is offered for a `with` block, for a
    statement that shares its line with another, or for flags inside lists and mappings. On JAX
    (`fixtures/fix_small/`), the code with and without the deleted line gives the same values
    under jit, vmap, grad, jit(grad) and vmap(grad).
    """

    CODE = "VJP401"
    NAME = "direct-linearize-flag"
    SEVERITY = Severity.WARNING
    TRIGGERS = (b"direct_linearize", b"DIRECT_LINEARIZE")
    FIX = "remove the statement"
    INVALID = ['''
import jax

jax.config.update("jax_use_direct_linearize", False)
''']
    VALID = ['''
import jax

jax.config.update("jax_enable_x64", True)
''']

    def visit_Call(self, node: ast.Call) -> None:
        kind = self._setting_call(node)
        if kind == "config":
            self._report_statement(node, f"`{self.quote(node)}` sets")
            return
        if kind == "context":
            if isinstance(self.model.index.parent(node), ast.withitem):
                self.report(node, self._message(f"`with {self.quote(node)}:` sets",
                                                "Remove the `with` and dedent its body"))
            else:
                self._report_statement(node, f"`{self.quote(node)}` sets")
            return
        if kind == "env":
            self._report_statement(node, f"`{self.quote(node)}` sets `{ENV}`, the environment variable of")
            return
        for keyword in node.keywords:
            if keyword.arg == ENV:
                self.report(keyword, self._message(f"`{ENV}=...` sets the environment variable of"))

    def visit_Dict(self, node: ast.Dict) -> None:
        for key in node.keys:
            if isinstance(key, ast.Constant) and key.value == ENV:
                self.report(key, self._message(f"the entry `{ENV!r}` sets the environment variable of"))

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if self._is_environ_item(target):
                self._report_statement(node, f"`{self.quote(target)} = ...` sets the environment variable of",
                                       statement=node)
                return

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str) or not ABSL.match(node.value):
            return
        parent = self.model.index.parent(node)
        if isinstance(parent, (ast.Expr, ast.JoinedStr)):
            return  # a docstring or a piece of an f-string: text, not a flag
        self.report(node, self._message(f"the absl flag `{node.value}` sets"))

    # -- helpers ------------------------------------------------------------------------------
    def _setting_call(self, node: ast.Call) -> Optional[str]:
        """"config" (`config.update(FLAG, ...)`), "context" (`config.use_direct_linearize(...)`),
        "env" (`os.environ.setdefault(ENV, ...)`, `os.putenv`, `monkeypatch.setenv`) or None."""
        index = self.model.index

        def first() -> object:  # evaluated only for the few calls that could set the flag
            return constant_value(index, node.args[0]) if node.args else None

        if isinstance(node.func, ast.Attribute) and node.func.attr == "update" and first() == FLAG:
            return "config" if (index.qualname(node.func.value) or "") in CONFIG_OBJECTS else None
        func_q = index.qualname(node.func) or ""
        if func_q.startswith("jax.") and func_q.endswith(".use_direct_linearize"):
            return "context"
        if (func_q in ENV_SETTERS or (isinstance(node.func, ast.Attribute)
                                      and node.func.attr == "setenv")) and first() == ENV:
            return "env"
        return None

    def _removable(self, stmt: ast.stmt) -> bool:
        """A statement this rule's fix deletes."""
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            return self._setting_call(stmt.value) is not None
        return isinstance(stmt, ast.Assign) and any(self._is_environ_item(t) for t in stmt.targets)

    def _is_environ_item(self, target: ast.expr) -> bool:
        return (isinstance(target, ast.Subscript) and self.model.index.qualname(target.value) == "os.environ"
                and constant_value(self.model.index, target.slice) == ENV)

    def _message(self, what: str, action: str = "Remove it") -> str:
        return (f"{what} a dead flag: JAX 0.10.2 defines `{FLAG}` but reads it nowhere (`grad` always "
                f"linearizes with LinearizeTracer), so this changes nothing. {action}")

    def _report_statement(self, node: ast.AST, what: str, statement: Optional[ast.stmt] = None) -> None:
        if statement is None:
            parent = self.model.index.parent(node)
            statement = parent if isinstance(parent, ast.Expr) and parent.value is node else None
        edits = self._deletion(statement) if statement is not None else None
        if edits is None:
            self.report(node, self._message(what))
            return
        removes = edits[0].content == ""
        self.report(node, self._message(what),
                    fix=self.editing(Applicability.SAFE,
                                     "Remove the statement" if removes else "Replace the statement with `pass`", edits))

    def _deletion(self, stmt: ast.stmt) -> Optional[List[Edit]]:
        """Edits deleting `stmt`'s lines, or turning it into `pass`; None when that is not clean."""
        parent = self.model.index.parent(stmt)
        body = _body_containing(parent, stmt) if parent is not None else None
        if body is None:
            return None
        lines = self.model.lines
        first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
        if last > len(lines) or lines[first - 1][: byte_to_char(lines[first - 1], stmt.col_offset)].strip():
            return None  # something (a compound header, another statement) precedes it on its line
        rest = lines[last - 1][byte_to_char(lines[last - 1], stmt.end_col_offset or 0):].strip()
        if rest and not rest.startswith("#"):
            return None  # `;` and another statement follow
        position = body.index(stmt)
        if position > 0 and (body[position - 1].end_lineno or 0) >= first:
            return None
        # The last statement standing becomes `pass`: when every statement of the block is removed
        # by this rule, the first one is replaced, so each fix alone and all of them together parse.
        last_standing = len(body) == 1 or (position == 0 and all(self._removable(s) for s in body))
        if last_standing and not isinstance(parent, ast.Module):
            start_col = byte_to_char(lines[first - 1], stmt.col_offset) + 1
            end_col = byte_to_char(lines[last - 1], stmt.end_col_offset or 0) + 1
            return [Edit("pass", Position(first, start_col), Position(last, end_col))]
        if last < len(lines):
            return [Edit("", Position(first, 1), Position(last + 1, 1))]
        if first > 1:  # the last line of the file: take the newline before it instead
            return [Edit("", Position(first - 1, len(lines[first - 2]) + 1), Position(last, len(lines[last - 1]) + 1))]
        return [Edit("", Position(first, 1), Position(last, len(lines[last - 1]) + 1))]


def _body_containing(parent: ast.AST, stmt: ast.stmt) -> Optional[List[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        body = getattr(parent, field, None)
        if isinstance(body, list) and any(s is stmt for s in body):
            return body
    return None
