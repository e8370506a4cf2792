"""The Language Server's project facts: one workspace folder's cross-module summaries
(`vjplint.project.cross_values`, the rows the command line passes as `RunFacts.rows`), kept
per file and updated per file.

Each Python file and notebook (its code cells, vjplint.syntax.notebook: a caller only) of the folder
has an entry for its text (the editor's buffer while it is open, else the file on disk; a digest of it is kept, not the text): the names it exports that callers elsewhere may matter to, and its rows
(what it passes to, registers on, uses of the other modules' targets), and what
vjplint.project.loops keeps of it (the loop helpers it imports or defines). An update of one file
recomputes its entry, the entries of the files whose rows depend on it (they name a target it
added or dropped, or read one of its module-level bindings), and answers which modules' facts
changed: only their documents need linting again. A keystroke that changes nothing another
module sees changes no facts, and costs a few byte scans (a parse and a model only when the file
calls a target). The facts equal `vjplint check` over the folder's files as they are now. The
first build reuses, and then writes, the command line's per-file cache of these summaries (one
per folder: a `vjplint check .` run in the folder shares it).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from vjplint.settings.config import Config
from vjplint.project.loops import file_info, loop_rows
from vjplint.project.rule_defs import with_rule_rows
from vjplint.project.cross_values import Targets, _tuples, binding_of, file_defines, file_rows, module_bytes
from vjplint.project.cross_values import RACY_NS, _Cache

Rows = Tuple[tuple, ...]


class Stopped(Exception):
    """The build was abandoned (the folder's settings changed, the server is ending)."""


@dataclass
class _File:
    module: str
    package: str
    display: str
    digest: bytes = b""  # of the text last summarised (the texts are not kept: a large tree's are megabytes)
    defines: List[str] = field(default_factory=list)
    rows: List[list] = field(default_factory=list)  # [owner module, row]
    consulted: Set[str] = field(default_factory=set)  # modules whose bindings its rows read
    info: Dict[str, object] = field(default_factory=dict)  # vjplint.project.loops.file_info, completed there


def _digest(data: bytes) -> bytes:
    import hashlib

    return hashlib.blake2b(data, digest_size=16).digest()


class FolderFacts:
    """The project facts of one workspace folder. Not thread-safe: the server calls it from its
    lint thread only (the first build may run in another thread, before it is published)."""

    def __init__(self, files: Sequence[Tuple[Path, str, str, str]],
                 buffer: Callable[[str], Optional[str]] = lambda path: None,
                 cache: Optional[Tuple[Config, str]] = None) -> None:
        # files: (path, module, package, display), in the command line's order (rows follow it).
        self.files: Dict[str, _File] = {os.path.abspath(p): _File(m, pkg, d) for p, m, pkg, d in files}
        self.by_module = {f.module: key for key, f in self.files.items()}
        self.buffer = buffer
        self.cache = cache  # (anchor, folder): the command line's per-file cache (vjplint.project.cross_values)
        self.targets = Targets({})
        self.bindings: Dict[str, Optional[Tuple[str, str, str]]] = {}
        self.external: Dict[str, Rows] = {}
        self.by_display = {f.display: key for key, f in self.files.items()}
        self.loops: Dict[str, List[tuple]] = {}  # module -> its rows about imported loop helpers

    # -- reading ---------------------------------------------------------------------------
    def facts_of(self, path: str) -> Rows:
        entry = self.files.get(os.path.abspath(path))
        return self.external.get(entry.module, ()) if entry is not None else ()

    def modules(self) -> List[Tuple[Path, str, Callable[[], bytes]]]:
        """Every module of the folder: (path, display name, a reader of its text: the editor's
        buffer while it is open, else the file), as vjplint.fixes.named_elsewhere asks."""
        return [(Path(key), entry.display, lambda key=key: self._read(key)) for key, entry in self.files.items()]

    def _read(self, key: str) -> bytes:
        text = self.buffer(key)
        if text is not None:
            return text.encode("utf-8", "surrogatepass")
        try:
            return module_bytes(Path(key))  # a notebook's code cells (the buffer: see the server's buffer_of)
        except OSError:
            return b""

    # -- building ----------------------------------------------------------------------------
    def build(self, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Every file read (buffers first) and summarised; `should_stop()` raises Stopped. A file
        on disk whose entry in the command line's cache is fresh is not read (as in a run)."""
        cache = _Cache(*self.cache) if self.cache is not None else None
        now = time.time_ns()
        entries: Dict[str, list] = {}  # display -> the cache entry (vjplint.project.cross_values.build_external)
        reused: Dict[str, list] = {}
        for key, entry in self.files.items():
            if should_stop():
                raise Stopped
            st = None
            if cache is not None and self.buffer(key) is None:
                try:
                    st = os.stat(key)
                except OSError:
                    st = None
                old = cache.entries.get(entry.display) if st is not None else None
                if old is not None and old[0] == st.st_size and old[1] == st.st_mtime_ns \
                        and st.st_mtime_ns < old[2] - RACY_NS:
                    entry.defines, entries[entry.display] = list(old[3]), old
                    entry.info = old[6]
                    reused[key] = old
                    continue
            data = self._read(key)
            entry.digest, entry.defines, entry.info = _digest(data), file_defines(data, entry.display), file_info(data)
            if st is not None:
                entries[entry.display] = [st.st_size, st.st_mtime_ns, now, entry.defines, "", [], entry.info]
        self._retarget()
        self.loops = self._loop_rows()
        for key, entry in self.files.items():
            if should_stop():
                raise Stopped
            old = reused.get(key)
            if old is not None and old[4] == self.targets.key:  # rows that read no other module's bindings
                entry.rows = json.loads(json.dumps(old[5]))
                continue
            self._summarise(key, entry)
            row = entries.get(entry.display)
            if row is not None:
                row[2], row[4], row[5] = now, ("" if entry.consulted else self.targets.key), entry.rows
        self.external = self._aggregate(None)
        if cache is not None:
            cache.save(entries)

    def _retarget(self) -> None:
        defines: Dict[str, List[str]] = {}
        module_of: Dict[str, str] = {}
        for e in self.files.values():
            defines[e.display], module_of[e.display] = list(e.defines), e.module
        self.targets = Targets.of(defines, module_of)

    def _exported(self, consulted: Set[str]) -> Callable[[str], Optional[Tuple[str, str, str]]]:
        def exported(absolute: str) -> Optional[Tuple[str, str, str]]:
            owner, _, name = absolute.rpartition(".")
            consulted.add(owner)
            if absolute not in self.bindings:
                key = self.by_module.get(owner)
                entry = self.files.get(key) if key is not None else None
                self.bindings[absolute] = binding_of(self._read(key), name, entry.display) \
                    if key is not None and entry is not None else None
            return self.bindings[absolute]
        return exported

    def _summarise(self, key: str, entry: _File, data: Optional[bytes] = None) -> None:
        entry.consulted = set()
        rows = file_rows(self._read(key) if data is None else data, entry.module, entry.package, entry.display,
                         self.targets, self._exported(entry.consulted))
        entry.rows = json.loads(json.dumps(rows))  # as the command line's cache holds them: lists

    def _loop_rows(self, edited: Optional[Tuple[str, bytes]] = None) -> Dict[str, List[tuple]]:
        def read(display: str) -> bytes:
            key = self.by_display[display]
            return edited[1] if edited is not None and key == edited[0] else self._read(key)

        listed = [(e.module, e.package, e.display) for e in self.files.values()]
        infos = {e.display: e.info for e in self.files.values()}
        return with_rule_rows(loop_rows(listed, infos, read), listed, infos, read)  # rules defined elsewhere too

    def _aggregate(self, owners: Optional[Set[str]]) -> Dict[str, Rows]:
        """module -> rows from the other modules (only `owners`' when given), in file order: the
        rows about imported loop helpers first (as the command line orders them)."""
        out: Dict[str, List[tuple]] = {m: list(rows) for m, rows in self.loops.items()
                                       if owners is None or m in owners}
        for entry in self.files.values():
            for owner, row in entry.rows:
                if owner != entry.module and (owners is None or owner in owners):
                    out.setdefault(owner, []).append(_tuples(row))
        return {module: tuple(rows) for module, rows in out.items()}

    # -- updating ------------------------------------------------------------------------------
    def update(self, path: str, text: Optional[str] = None) -> Set[str]:
        """`path` now holds `text` (None: read it from the buffer or the disk). The modules
        whose facts changed."""
        key = os.path.abspath(path)
        entry = self.files.get(key)
        if entry is None or len(self.files) < 2:  # one module: nothing to learn (as on the command line)
            return set()
        data = text.encode("utf-8", "surrogatepass") if text is not None else self._read(key)
        digest = _digest(data)
        if digest == entry.digest:
            return set()
        entry.digest = digest
        for absolute in [a for a in self.bindings if a.rpartition(".")[0] == entry.module]:
            del self.bindings[absolute]
        defines = file_defines(data, entry.display)
        entry.info = file_info(data)
        loops = self._loop_rows((key, data))
        moved = {m for m in set(loops) | set(self.loops) if loops.get(m) != self.loops.get(m)}
        self.loops = loops
        todo = {key} | {k for k, e in self.files.items() if entry.module in e.consulted}
        if defines != entry.defines:
            changed = set(defines).symmetric_difference(entry.defines)
            entry.defines = defines
            self._retarget()
            words = [name.encode() for name in changed]  # the files naming one (read again: rare)
            todo |= {k for k in self.files if k != key and any(w in self._read(k) for w in words)}
        return self._resummarise(todo, key, data, moved)

    def _resummarise(self, keys: Iterable[str], key: str, data: bytes, moved: Set[str]) -> Set[str]:
        owners: Set[str] = set(moved)
        for k in keys:
            entry = self.files[k]
            owners.update(owner for owner, _ in entry.rows)
            self._summarise(k, entry, data if k == key else None)
            owners.update(owner for owner, _ in entry.rows)
        if not owners:
            return set()
        fresh = self._aggregate(owners)
        changed = {m for m in owners if fresh.get(m, ()) != self.external.get(m, ())}
        for module in changed:
            if fresh.get(module):
                self.external[module] = fresh[module]
            else:
                self.external.pop(module, None)
        return changed
