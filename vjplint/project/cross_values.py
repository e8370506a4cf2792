"""Per-run cross-module value summaries (vjplint.facts.crossmodule), cached per file.

Two passes over the run's modules: which top-level names each module exports that callers may
care about (custom derivatives and factories building one), then, for each module importing one
of them, its calls, registrations and uses with the argument kinds `vjplint.facts.value_kinds` infers there.
Each file's entry is kept by size and mtime (with the result cache's racy-mtime guard) and, for
its summary, by a digest of the run's targets, so a warm run re-analyses only what changed.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from vjplint.settings.config import Config, cache_root
from vjplint.project.text import IMPORT_LINE as _IMPORT_LINE  # noqa: F401  (tests read them here)
from vjplint.project.text import WORD as _WORD  # noqa: F401
from vjplint.project.text import Known, creators as _creators, scan as _scan
from vjplint.project.text import imported_words as _imported_words
from vjplint.project.text import parse as _parse
from vjplint.project.text import parse_lazily as _parse_lazily
from vjplint.facts.crossmodule import FORWARD_ONLY, exported_targets, forward_targets, references, top_statements
from vjplint.project.loops import file_info, loop_rows
from vjplint.project.rule_defs import with_rule_rows
from vjplint.settings.cache_files import code_fingerprint, ensure_cache_root, entries_sum, read_index, row_matches, short_name
from vjplint.syntax.notebook import CellMap, NotebookError, python_bytes

FORMAT = 3  # 3: file infos hold "p" (vjplint.project.rule_defs.rule_info)
RACY_NS = 2_000_000_000  # vjplint.batch.cache.RACY_NS
TRIGGERS = (b"custom_vjp", b"custom_jvp")


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


NOTEBOOK = ".ipynb"  # a notebook takes part as its code cells (vjplint.syntax.notebook): a caller, never imported


def module_bytes(path: Path) -> bytes:
    """What the summaries read of a file: its bytes, a notebook's code cells as one module."""
    data = Path(path).read_bytes()
    if not str(path).endswith(NOTEBOOK):
        return data

    try:
        return python_bytes(str(path), data)
    except NotebookError:
        return b""


def file_defines(data: bytes, display: str = "", made: Optional[Tuple[bool, bool]] = None) -> List[str]:
    """The top-level names of a module that callers elsewhere may matter to (exported_targets);
    none for a notebook (no module can import it). `made`: `creators(data)`, when known."""
    if display.endswith(NOTEBOOK) or not any(made if made is not None else _creators(data)):  # neither of TRIGGERS
        return []
    text = data.decode("utf-8", "replace")
    tops = top_statements(text)  # the module-level statements' first lines, found once for both readers
    names = exported_targets(text, tops)
    return names + forward_targets(text, names, tops)


class Targets:
    """The run's exported names (`pkg.mod.name` -> (module, name)) and the bytes a caller of one
    must contain (the name and its module's last part), for a cheap test before parsing."""

    def __init__(self, targets: Dict[str, Tuple[str, str]], forward_only: Set[str] = frozenset()) -> None:
        self.targets = targets
        self.forward_only = set(forward_only)  # targets summarised only for forward mode applied to them
        self.key = hashlib.sha256("\n".join(sorted(targets)).encode()).hexdigest()[:16]
        self.names_of: Dict[bytes, Set[bytes]] = {}  # a module's last part -> its targets' names
        for t in targets:
            head, name = t.split(".")[-2:]
            self.names_of.setdefault(head.encode(), set()).add(name.encode())

    @classmethod
    def of(cls, defines: Dict[str, List[str]], module_of: Dict[str, str]) -> "Targets":
        targets: Dict[str, Tuple[str, str]] = {}
        forward_only: Set[str] = set()
        for key, names in defines.items():
            for name in names:
                if name.startswith(FORWARD_ONLY):
                    name = name[len(FORWARD_ONLY):]
                    forward_only.add(f"{module_of[key]}.{name}")
                targets[f"{module_of[key]}.{name}"] = (module_of[key], name)
        return cls(targets, forward_only)

    def may_call(self, data: bytes) -> bool:
        """Whether `data` can reference a target at all: an import line names the target's module
        (`from pkg.mod import f`, `import pkg.mod`) and the target's name occurs. Modules first:
        they are few, names many (the server runs this on every edit of a module)."""
        if b"import" not in data:
            return False
        # An import line's words are in `data`: no search of the whole file for each module.
        imported = _imported_words(data).intersection(self.names_of)
        return any(n in data for h in imported for n in self.names_of[h])


def file_rows(data: bytes, module: str, package: str, display: str, targets: Targets,
              exported: Any, parsed: Any = None, focus: bool = True) -> List[list]:
    """[owner module, row] for what the module `data` does with the other modules' targets;
    `exported(absolute)` answers what another module binds at module level. `parsed`: the
    module's `project_text.parse`, when it was parsed already; else only what the summary reads
    of it is parsed (`project_text.parse_lazily`). `focus` off (a test comparing with the whole
    modules, vjplint.lint.session): the whole module is parsed and summarised."""
    from vjplint.project.summary import summarize

    if not targets.targets or not targets.may_call(data):
        return []
    # Only what the summary reads is parsed, unless a test compares the whole modules (focus off).
    found = parsed if parsed is not None else _parse_lazily(data) if focus else _parse(data)
    if found is None or not references(found[0], package, set(targets.targets)):
        return []
    own = {k: v for k, v in targets.targets.items() if v[0] != module}
    rows = [[owner, row] for owner, row in summarize(found[0], found[1], package, display, own, exported,
                                                     targets.forward_only, found[2],
                                                     lazy=found[3] if len(found) > 3 else None, focus=focus)]
    return _in_cells(rows, display, found[1]) if display.endswith(NOTEBOOK) and rows else rows


def _in_cells(rows: Any, display: str, lines: List[str]) -> Any:
    """A notebook's rows quote its cell and the line in it (`nb.ipynb:cell 3:2`, as its own
    diagnostics read), not a line of its code cells joined."""
    cells = CellMap.of(lines)
    at = re.compile(re.escape(display) + r":(\d+)\b")

    def where(m: "re.Match[str]") -> str:
        cell, row = cells.locate(int(m.group(1)))
        return f"{display}:cell {cell}:{row}" if cell is not None else m.group(0)

    def rewrite(value: Any) -> Any:
        if isinstance(value, str):
            return at.sub(where, value)
        if isinstance(value, (list, tuple)):
            return type(value)(rewrite(v) for v in value)
        return value
    return rewrite(rows)


def binding_of(data: Optional[bytes], name: str, display: str, focus: bool = True) -> Optional[Tuple[str, str, str]]:
    """What a module (its bytes) binds to `name` at module level, when values knows its kind."""
    from vjplint.project.summary import module_binding

    found = _parse(data) if data is not None else None
    return module_binding(found[0], found[1], name, display, found[2], focus) if found is not None else None


def build_external(files: Sequence[Tuple[Path, str, str, str]], anchor: Optional[Config],
                   use_cache: bool = True, known: Optional[Known] = None,
                   focus: bool = True) -> Dict[str, Tuple[tuple, ...]]:
    """module -> rows about its names from the other modules of the run, and about the functions
    of other modules it imports (vjplint.project.loops). `files` holds (path, module name,
    package, display path) per Python file. A cache entry: [size, mtime_ns, made_ns, defines,
    targets_key, rows, the project_loops dict]. `known`: bytes of .py files (a notebook's Python) already read (by
    `str(path)`, with what `creators` says of them), taken from it instead of reading them again."""
    cache = _Cache(anchor) if use_cache and anchor is not None else None
    now = time.time_ns()
    fresh: Dict[str, bool] = {}
    data_of: Dict[str, Optional[bytes]] = {}
    defines: Dict[str, List[str]] = {}
    entries: Dict[str, list] = {}
    for path, module, _, display in files:
        key = display
        try:
            st = os.stat(path)
        except OSError:
            continue
        entry = cache.entries.get(key) if cache is not None else None
        if entry is not None and entry[0] == st.st_size and entry[1] == st.st_mtime_ns and st.st_mtime_ns < entry[2] - RACY_NS:
            fresh[key] = True
            defines[key] = list(entry[3])
            entries[key] = entry
            continue
        fresh[key] = False
        data, found = known.pop(str(path), (None, None)) if known else (None, None)
        if data is None:
            try:
                data = module_bytes(path)
            except OSError:
                continue
        if found is None:
            found = _scan(data)
        data_of[key] = data
        names = file_defines(data, display, found.made)
        defines[key] = names
        entries[key] = [st.st_size, st.st_mtime_ns, now, names, "", [], file_info(data, found.made, found.registers)]
    module_of = {display: module for _, module, _, display in files}
    targets = Targets.of(defines, module_of)
    path_of = {display: path for path, _, _, display in files}

    def read(display: str) -> Optional[bytes]:
        data = data_of.get(display)
        if data is None:
            try:
                data = data_of[display] = module_bytes(path_of[display])
            except OSError:
                return None
        return data

    parsed: Dict[str, Any] = {}  # display -> the parse of a helper module loop_rows summarised
    listed = [(m, p, d) for _, m, p, d in files if d in entries]
    infos = {d: e[6] for d, e in entries.items()}
    out: Dict[str, List[tuple]] = with_rule_rows(loop_rows(listed, infos, read, parsed), listed, infos, read)
    if not targets.targets:
        if cache is not None:
            cache.save(entries)
        return {module: tuple(rows) for module, rows in out.items()}
    by_module = {module: (path, display) for path, module, _, display in files}
    bindings: Dict[str, Optional[Tuple[str, str, str]]] = {}

    consulted: List[str] = []  # modules read for the current caller: its rows then depend on them

    def exported(absolute: str) -> Optional[Tuple[str, str, str]]:
        """What the run's module `pkg.mod` binds to `name` at module level (`pkg.mod.name`)."""
        consulted.append(absolute)
        if absolute not in bindings:
            bindings[absolute] = None
            owner, _, name = absolute.rpartition(".")
            if owner in by_module:
                path, shown = by_module[owner]
                try:
                    data: Optional[bytes] = Path(path).read_bytes()
                except OSError:
                    data = None
                bindings[absolute] = binding_of(data, name, shown, focus)
        return bindings[absolute]

    for path, module, package, display in files:
        entry = entries.get(display)
        if entry is None:
            continue
        if not (fresh.get(display) and entry[4] == targets.key):
            data = read(display) or b""
            consulted.clear()
            rows = file_rows(data, module, package, display, targets, exported, parsed.pop(display, None), focus)
            # Rows that read another module's bindings are recomputed each run (that module may change).
            entry[4], entry[5] = ("" if consulted else targets.key), json.loads(json.dumps(rows))
            consulted.clear()
            entry[2] = now
        for owner, row in entry[5]:
            if owner != module:
                out.setdefault(owner, []).append(_tuples(row))
    if cache is not None:
        cache.save(entries)
    return {module: tuple(rows) for module, rows in out.items()}


# [size, mtime_ns, made_ns, defines, targets key, rows (owner, row), the project_loops dict]
_ENTRY = (int, int, int, list, str, list, dict)


class _Cache:
    """display -> entry, beside the project index's cache; one file per `scope` (the directory
    the displays are relative to: the working directory of a run, a Language Server's folder)."""

    def __init__(self, anchor: Config, scope: Optional[str] = None) -> None:
        self.root = cache_root(anchor)
        self.build = code_fingerprint()
        self.key = "\n".join((scope or os.getcwd(), str(FORMAT), "values"))
        self.path = self.root / short_name(self.build) / "project" / (short_name(self.key) + ".json")
        self.entries: Dict[str, list] = {}
        self.loaded = ""
        try:
            raw = self.path.read_bytes()
        except OSError:
            return
        entries = read_index(raw, {"format": FORMAT, "build": self.build, "key": self.key})
        if entries is not None:  # a damaged index is an empty one, written anew at the end of the run
            self.entries = {k: v for k, v in entries.items() if row_matches(v, _ENTRY)
                            and all(isinstance(n, str) for n in v[3])
                            and all(isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) for r in v[5])}
            self.loaded = hashlib.sha256(raw).hexdigest()

    def save(self, entries: Dict[str, list]) -> None:
        text = json.dumps({"format": FORMAT, "build": self.build, "key": self.key, "sum": entries_sum(entries),
                           "entries": entries}, separators=(",", ":"))
        if hashlib.sha256(text.encode()).hexdigest() == self.loaded:
            return
        try:
            ensure_cache_root(str(self.root))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only tree still lints
