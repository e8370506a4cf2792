"""Formatters: diagnostics -> text. Each takes the run's diagnostics and a context.

May import: rules (their docs and registry) and everything below them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Tuple

from vjplint.diagnostics import Diagnostic
from vjplint.links import DEFAULT_DOCS_URL, rule_url
from vjplint.syntax.notebook import CellMap


@dataclass
class OutputContext:
    """What the formatters are told besides the diagnostics."""

    show_fixes: bool = False
    unsafe_fixes: bool = False
    statistics: bool = False
    quiet: bool = False  # diagnostics only: no summary line
    # "All checks passed!" only when something was checked and nothing went wrong.
    checked: bool = True
    failed: bool = False
    fixed_count: int = 0
    sources: Dict[str, List[str]] = field(default_factory=dict)  # filename -> lines, for excerpts
    docs_url: str = DEFAULT_DOCS_URL  # where rule links point (vjplint.links)
    # unsafe fixes no diagnostic carries (a rewrite across modules, vjplint.cli.fix_cross): the
    # summary counts them with the hidden ones
    hidden_fixes: int = 0
    color: bool = False  # ANSI colours in the text formats (vjplint.settings.options.colour_wanted)

    def url(self, code: str) -> str:
        return rule_url(code, self.docs_url)

    def lines_of(self, d: Diagnostic) -> List[str]:
        """The lines `d`'s rows count in: its file's, or for a notebook its cell's (the sources of a
        notebook are its joined Python text, vjplint.syntax.notebook)."""
        lines = self.sources.get(d.filename) or []
        if lines and d.cell is not None:
            return CellMap.of(lines).cell_lines(lines, d.cell)
        return lines


def cell_prefix(d: Diagnostic) -> str:
    """`cell 3:` for a notebook's finding (ruff's spelling in `nb.ipynb:cell 3:5:12`), else ""."""
    return f"cell {d.cell}:" if d.cell is not None else ""


Formatter = Callable[[List[Diagnostic], OutputContext], str]


def get_formatter(name: str) -> Formatter:
    """The formatter of an output format (vjplint.settings.options.OUTPUT_FORMATS)."""
    import importlib

    module, function = _FORMATTERS[name]  # only this one is imported (junit's XML: 10 ms)
    return getattr(importlib.import_module(f"vjplint.output.{module}"), function)


_FORMATTERS: Dict[str, Tuple[str, str]] = {
    "text": ("text", "render_full"), "concise": ("text", "render_concise"), "json": ("json_", "render"),
    "sarif": ("sarif", "render"), "github": ("github", "render"), "lsp": ("lsp", "render"),
    "gitlab": ("gitlab", "render"), "junit": ("junit", "render"), "rdjson": ("rdjson", "render"),
}
