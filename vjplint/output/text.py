"""ruff-style text output: `path:row:col: CODE [*] message`, excerpts, and a summary.

The full format wraps long messages (the evidence and the remedy make them long) at WIDTH
columns, continuation lines indented; `concise` keeps one line per diagnostic for tools that
parse it (errorformat, problem matchers).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import replace
from typing import List

from vjplint.diagnostics import Applicability, Diagnostic
from vjplint.output import OutputContext
from vjplint.syntax.notebook import CellMap


def _offered(d: Diagnostic, ctx: OutputContext) -> bool:
    return d.fix is not None and (d.fix.applicability is Applicability.SAFE or ctx.unsafe_fixes)


WIDTH = 100
CONTINUATION = "    "
# Control characters would corrupt the terminal and shift the caret: each is shown as its
# one-column Unicode "control picture" (NUL as \u2400), tabs as a space.
_PICTURES = {**{i: 0x2400 + i for i in range(0x20) if i != 0x09}, 0x09: 0x20, 0x7F: 0x2421}


# ANSI styles, as ruff colours its text: the path bold, separators cyan, the code red bold, the
# fix mark cyan, the caret red, `help` bold cyan (only when OutputContext.color).
BOLD, CYAN, RED, RESET = "\033[1m", "\033[36m", "\033[1;31m", "\033[0m"


def _paint(text: str, style: str, ctx: OutputContext) -> str:
    return f"{style}{text}{RESET}" if ctx.color and text else text


def _line(d: Diagnostic, ctx: OutputContext, message: bool = True) -> str:
    mark = " [*]" if _offered(d, ctx) else ""
    cell = f"cell {d.cell}:" if d.cell is not None else ""  # a notebook's (ruff's spelling)
    if not ctx.color:
        return f"{d.filename}:{cell}{d.location.row}:{d.location.column}: {d.code}{mark}" + \
            (f" {d.message}" if message else "")
    colon = _paint(":", CYAN, ctx)
    where = colon.join([_paint(d.filename, BOLD, ctx), *([cell[:-1]] if cell else []), str(d.location.row),
                        str(d.location.column)])
    return f"{where}{colon} {_paint(d.code, RED, ctx)}{_paint(mark, CYAN, ctx)}" + \
        (f" {d.message}" if message else "")


def _wrapped(d: Diagnostic, ctx: OutputContext) -> List[str]:
    plain_ctx = replace(ctx, color=False) if ctx.color else ctx
    line = _line(d, plain_ctx)
    lines = [line] if len(line) <= WIDTH else textwrap.wrap(
        line, WIDTH, subsequent_indent=CONTINUATION, break_long_words=False, break_on_hyphens=False)
    if ctx.color:  # wrapped on the plain text, then the head painted: the same breaks either way
        plain_head = _line(d, plain_ctx, message=False)
        if lines[0].startswith(plain_head):
            lines[0] = _line(d, ctx, message=False) + lines[0][len(plain_head):]
    return lines


SNIPPET = 120  # characters of a source line shown; a longer line is cut around the column


def excerpt(code: str, column: int, width: int) -> "tuple[str, int, int]":
    """The part of a source line to show (cut ends marked `…`), the caret's offset in it and its
    width: a generated or minified line can be megabytes."""
    if len(code) <= SNIPPET:
        return code, column - 1, width
    start = max(0, min(column - 1 - SNIPPET // 3, len(code) - SNIPPET))
    end = start + SNIPPET
    prefix, suffix = ("…" if start > 0 else ""), ("…" if end < len(code) else "")
    return (prefix + code[start:end] + suffix, column - 1 - start + len(prefix),
            max(1, min(width, end - (column - 1))))


def printable(code: str) -> str:
    return code.translate(_PICTURES)


def render_concise(diagnostics: List[Diagnostic], ctx: OutputContext) -> str:
    out = [] if ctx.statistics else [_line(d, ctx) for d in diagnostics]
    out.extend(_summary(diagnostics, ctx))
    return "\n".join(out) + ("\n" if out else "")


def render_full(diagnostics: List[Diagnostic], ctx: OutputContext) -> str:
    out: List[str] = []
    for d in ([] if ctx.statistics else diagnostics):  # --statistics: the table alone (ruff's)
        out.extend(_wrapped(d, ctx))
        lines = ctx.sources.get(d.filename)
        if lines and d.cell is not None:  # the notebook's Python text: the cell's lines (vjplint.syntax.notebook)

            lines = CellMap.of(lines).cell_lines(lines, d.cell)
        if lines and 0 < d.location.row <= len(lines):
            code = lines[d.location.row - 1].rstrip("\r\n")
            gutter = f"{d.location.row:>4} | "
            width = (d.end_location.column - d.location.column) if d.end_location.row == d.location.row else 1
            code, offset, width = excerpt(code, d.location.column, max(width, 1))
            out.append(gutter + printable(code))
            out.append(" " * (len(gutter) - 2) + "| " + " " * offset + _paint("^" * width, RED, ctx))
        if d.fix is not None and (ctx.show_fixes or _offered(d, ctx)):
            label = "" if d.fix.applicability is Applicability.SAFE else " (unsafe)"
            out.append(f"     = {_paint('help' + label, BOLD + CYAN, ctx)}: {d.fix.message}")
        out.append("")
    out.extend(_summary(diagnostics, ctx))
    return "\n".join(out) + ("\n" if out else "")


def _summary(diagnostics: List[Diagnostic], ctx: OutputContext) -> List[str]:
    if ctx.quiet:
        return []
    out: List[str] = []
    if ctx.statistics:
        counts = Counter((d.code, d.name) for d in diagnostics)
        fixable = Counter(d.code for d in diagnostics if _offered(d, ctx))
        width = len(str(max(counts.values(), default=0)))  # ruff's: counts right-aligned to the widest
        for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            mark = "[*]" if fixable[code] == n else "[-]" if fixable[code] else "[ ]"  # ruff's: all, some, none
            out.append(f"{n:>{width}}\t{code}\t{mark} {name}")
    n = len(diagnostics)
    safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability is Applicability.SAFE)
    unsafe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability is Applicability.UNSAFE)
    if not ctx.unsafe_fixes:
        unsafe += ctx.hidden_fixes
    if ctx.fixed_count:
        out.append(f"Fixed {ctx.fixed_count} problem{'s' if ctx.fixed_count != 1 else ''}.")
    if n == 0:
        if not ctx.fixed_count and ctx.checked and not ctx.failed:
            out.append("All checks passed!")
        return out
    word = "problem" if n == 1 else "problems"
    if safe or (ctx.unsafe_fixes and unsafe):
        fixable = safe + (unsafe if ctx.unsafe_fixes else 0)
        line = f"Found {n} {word} ({fixable} fixable with --fix)."
    else:
        line = f"Found {n} {word}."
    if unsafe and not ctx.unsafe_fixes:
        line += f" ({unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with --unsafe-fixes.)"
    out.append(line)
    return out
