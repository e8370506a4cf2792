"""What the project indexes (vjplint.project_values, vjplint.project_loops) read from a module's
bytes before linting: its parse, and the words of its import lines."""
from __future__ import annotations

import re
from typing import Set


def parse(data: bytes):
    """(tree, lines, text), or None: a file only the newer-syntax fallback parses is left out (that
    fallback imports libcst, too slow for an index; linting the file reports it as usual)."""
    import ast

    from vjplint.positions import source_lines
    from vjplint.source import SourceError, decode

    try:
        text = decode(data).text
        return ast.parse(text), source_lines(text), text
    except (SourceError, SyntaxError, RecursionError, ValueError, MemoryError):
        return None


IMPORT_LINE = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import\b([^\n]*)|import[ \t]+([^\n]*))", re.MULTILINE)
WORD = re.compile(rb"\w+")


def imported_words(data: bytes) -> Set[bytes]:
    """The words of the module's import lines (module paths and imported names): a caller of
    `pkg.mod.f` has `mod` among them."""
    words: Set[bytes] = set()
    # Only lines holding `import` can match: find those (a literal search), not every line start.
    line = -1
    at = data.find(b"import")
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        if start != line:
            line = start
            m = IMPORT_LINE.match(data, start)
            if m is not None:
                for group in m.groups():
                    if group:
                        words.update(WORD.findall(group))
        at = data.find(b"import", at + 6)
    return words
