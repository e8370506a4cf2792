"""The project index: the custom-derivative wrappers of a run's modules, resolved across them.

Built once per run before any file is linted. Each file holding a trigger name
(`vjplint.model.wrappers.TRIGGERS`), and each package `__init__` (re-exports seldom name one), is
parsed in part (`vjplint.model.wrappers.detect_text`): its wrappers, imports and dispatch tables are
recorded and cached per file by size, mtime and content digest, like results, so a warm run
reads no unchanged file. Module names come from paths: a file's package is the chain of
directories with an `__init__.py` above it; a file outside packages is its stem. Names are then
resolved to a fixed point (a wrapper may forward to another, a package `__init__` may re-export
one), and every spelling that reaches a wrapper (`pkg.mod.w`, `pkg.w` through a re-export,
`.mod.w` from the files of `pkg`, `<self>.w` in `w`'s own module) becomes an alias of the
file's `vjplint.model.run_facts.RunFacts`, added after the configured `custom-vjp-aliases` (or
`custom-jvp-aliases`): no rule knows about it, and a change to a wrapper changes every file's
result-cache key, so cached results follow.

Only the modules of the run are known: a pre-commit run over one changed file sees the wrappers
that file defines, not those of unchanged files.
"""
from __future__ import annotations

import gc
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from vjplint.settings.config import Config, cache_root
from vjplint.model.jaxapi import JAX_JVP, JAX_VJP, LIBRARY_CREATORS, canonical_creator
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.model.wrappers import INSTANCE, SELF, FileWrappers, Forward, InferredKeyword, detect_text
from vjplint.project.text import Known, scan
from vjplint.project.discover import display_path
from vjplint.settings.cache_files import code_fingerprint, ensure_cache_root, entries_sum, read_index, row_matches, short_name
from vjplint.syntax.notebook import NotebookError, python_bytes
from vjplint.syntax.source import SourceError, decode

FORMAT = 1
RACY_NS = 2_000_000_000  # vjplint.batch.cache.RACY_NS
MAX_PASSES = 16  # forwarding chains longer than this are not followed
MAX_DEPTH = 12  # re-export hops for one name


@dataclass(frozen=True)
class Creator:
    """A creator of custom derivatives: JAX's, or a wrapper around it."""

    kind: str  # "vjp" or "jvp"
    keyword: str  # its nondiff keyword; "" when it drops nondiff arguments
    rules: Tuple[int, ...]  # positional parameters that are its fwd/bwd (or jvp) rules
    name: str  # its qualified name
    why: str = ""  # for a wrapper: "through the wrapper `w`, which calls ..."
    exact: bool = False  # the JAX creator itself (a re-export), not a wrapper
    trail: str = ""  # what it calls, and where, down to JAX: "`jax.custom_vjp` at ops.py:41"


@dataclass
class ProjectIndex:
    """The run's wrappers and cross-module rows, by module."""

    spellings: Dict[str, Creator] = field(default_factory=dict)  # absolute name -> wrapper
    relative: Dict[str, Dict[str, Creator]] = field(default_factory=dict)  # package -> `.mod.w` -> wrapper
    package_of: Dict[str, str] = field(default_factory=dict)  # directory -> its package ("" outside)
    local: Dict[str, Dict[str, Creator]] = field(default_factory=dict)  # module -> `<self>.w` -> its own wrapper
    external: Dict[str, Tuple[tuple, ...]] = field(default_factory=dict)  # module -> vjplint.project.cross_values rows
    # absolute path -> the run's own key for a file whose module name an earlier file of the run has
    # (two `ops.py` outside packages): each keeps its own wrappers; imports of the name reach the first.
    renamed: Dict[str, str] = field(default_factory=dict)
    _facts: Dict[Tuple[Tuple[Tuple[str, str], ...], Tuple[Tuple[str, str], ...], str, str], RunFacts] = \
        field(default_factory=dict)

    def facts_for(self, config: Config, path: Path) -> RunFacts:
        """What the run derives about `path` linted with `config`: the wrappers as aliases (the
        relative spellings of `path`'s package too), what other modules do with its names; one
        object per (configured aliases, package, module), `NO_FACTS` when there is nothing."""
        if not self.spellings and not self.external:
            return NO_FACTS
        package = self.package_of.get(os.path.dirname(os.path.abspath(path)), "")
        module = (self.renamed.get(os.path.abspath(path)) or _module_name(package, path)) \
            if self.local or self.external else ""
        key = (config.custom_vjp_aliases, config.custom_jvp_aliases, package if package in self.relative else "",
               module if module in self.local or module in self.external else "")
        found = self._facts.get(key)  # most files share one
        if found is None:
            vjp, jvp = _inferred_aliases(config, {**self.spellings, **self.relative.get(package, {}),
                                                  **self.local.get(module, {})}) if self.spellings else ((), ())
            rows = self.external.get(module, ()) if not str(path).endswith(".ipynb") else ()  # a notebook is no module
            found = self._facts[key] = RunFacts(vjp, jvp, rows) if vjp or jvp or rows else NO_FACTS
        return found


def _inferred_aliases(config: Config, creators: Dict[str, Creator]) -> Tuple[Tuple[Tuple[str, InferredKeyword], ...], ...]:
    # What the configuration names, and the APIs vjplint knows (each with its own protocol:
    # vjplint.facts.collect.Recognizer's defaults), win.
    known = {name for name, _ in (*config.custom_vjp_aliases, *config.custom_jvp_aliases)}
    known.update(JAX_VJP, JAX_JVP, LIBRARY_CREATORS)
    added: Dict[str, List[Tuple[str, InferredKeyword]]] = {"vjp": [], "jvp": []}
    for name, c in sorted(creators.items()):
        if name not in known and canonical_creator(name) not in known:
            added[c.kind].append((name, InferredKeyword(c.keyword, c.rules, c.why, c.exact)))
    return tuple(added["vjp"]), tuple(added["jvp"])


# -- building -------------------------------------------------------------------------------
def build_index(files: Sequence[Path], anchor: Config, *, use_cache: bool = True,
                base: Optional[str] = None, cross_module: Optional[bool] = None, focus: bool = True,
                reads: Optional[Dict[str, "Read"]] = None) -> ProjectIndex:
    """The index of `files` (paths as the run names them); `anchor` says where the cache lives
    and which configured aliases wrappers may forward to. Messages show paths relative to `base`
    (the Language Server's workspace folder), else as the run displays them. `cross_module`
    adds the value summaries of vjplint.project.cross_values; by default only for runs (no `base`):
    the Language Server keeps single-file value inference, since its index follows saves, not
    the buffers being edited. `focus` off: the summaries read whole modules (tests compare).
    `reads`: where to leave what the build read of each .py file (str(path) -> `Read`), for the
    lint of the run that follows (vjplint.batch.parallel.lint_many), which then reads again only
    the files that may hold findings."""
    # The cyclic collector is paused, as while linting (vjplint.batch.parallel._lint): the
    # summaries parse whole modules, millions of young objects it would scan again and again.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build_index(files, anchor, use_cache, base, cross_module, focus, reads)
    finally:
        if was_enabled:
            gc.enable()


def _build_index(files: Sequence[Path], anchor: Config, use_cache: bool, base: Optional[str],
                 cross_module: Optional[bool], focus: bool = True,
                 reads: Optional[Dict[str, "Read"]] = None) -> ProjectIndex:
    index = ProjectIndex()
    cache = _IndexCache(anchor) if use_cache else None
    modules: Dict[str, Tuple[FileWrappers, str, str]] = {}  # module -> (record, its package, display)
    python: List[Tuple[Path, str, str, str]] = []  # (path, module, package, display) of .py files and notebooks
    init_dirs: Dict[str, bool] = {}
    name_owner: Dict[str, str] = {}  # module name -> the first file of the run that has it
    # The bytes of the .py files read here (a notebook's Python), handed to the value summaries: read once.
    known: Known = {}
    for given in files:
        path = given if isinstance(given, Path) else Path(given)  # one Path per file (pathlib is slow to build)
        absolute = os.path.abspath(path)
        directory = os.path.dirname(absolute)
        package = index.package_of.get(directory)
        if package is None:
            package = index.package_of[directory] = _package(directory, init_dirs)
        display = os.path.relpath(absolute, base) if base is not None else display_path(path)
        record = cache.record(display, path, known, reads) if cache is not None else \
            _analyse(path, False, known, reads)[1]
        module = _module_name(package, path)
        if absolute.endswith(".py") and name_owner.setdefault(module, absolute) != absolute:  # a name taken
            module = index.renamed[absolute] = f"{module}#{len(index.renamed) + 1}"
        if record is not None:
            modules[module] = (record, package, display)
        name = path.name
        if name.endswith(".py"):
            python.append((path, module, package, display))
        elif name.endswith(".ipynb"):  # a caller only: named by its path, no module imports it
            python.append((path, display, package, display))
    if cache is not None:
        cache.save()
    _Resolver(modules, anchor, index).run()
    if (base is None if cross_module is None else cross_module) and len(python) > 1:  # one file: nothing to learn
        from vjplint.project.cross_values import build_external

        index.external = build_external(python, anchor, use_cache=use_cache, known=known, focus=focus)
    return index


# (its size, its mtime_ns when stat'ed before the read else -1, the SHA-256 of its bytes or "",
# whether the default prefilter names occur in them as `may_contain_findings` reads them: `scan`)
Read = Tuple[int, int, str, bool]


def _module_name(package: str, path: Path) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]  # Path.stem, without building a Path
    return package if stem == "__init__" and package else f"{package}.{stem}" if package else stem


def _package(directory: str, has_init: Dict[str, bool]) -> str:
    """The dotted package of the files in `directory` ("" when it is no package)."""
    parts: List[str] = []
    current = directory
    while True:
        found = has_init.get(current)
        if found is None:
            found = has_init[current] = os.path.isfile(os.path.join(current, "__init__.py"))
        if not found:
            break
        parts.append(os.path.basename(current))
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return ".".join(reversed(parts))


def _read(path: Path) -> bytes:
    try:  # a notebook's wrappers are in its cells' Python (vjplint.syntax.notebook)
        return python_bytes(path.name, path.read_bytes())
    except NotebookError:
        return b""


def _analyse(path: Path, digest: bool = True, keep: Optional[Known] = None,
             reads: Optional[Dict[str, Read]] = None, st: Optional[os.stat_result] = None,
             ) -> Tuple[str, Optional[FileWrappers]]:
    """(content digest, or "" when unreadable or not asked; the file's record or None) for one
    file; unreadable and unparsable files have none (linting reports them). A .py file's bytes
    go to `keep` (by `str(Path(path))`, with what `creators` says of them), and a notebook's
    Python (what the value summaries read of it: converting a notebook again was a tenth of a
    cold index of the JAX tree). A .py file's `Read` goes to `reads` (`st`: its stat, taken
    before the read), so that the lint reads and scans it again only when it may hold findings
    (a notebook's prefilter reads its JSON, not the Python read here)."""
    try:
        data = _read(path)
    except OSError:
        return "", None
    found = scan(data)  # one pass over the bytes for the steps below and the value summaries
    made = found.made
    if keep is not None and path.name.endswith((".py", ".ipynb")):
        keep[str(path)] = data, found
    if digest:
        import hashlib

        digest_text = hashlib.sha256(data).hexdigest()
    else:
        digest_text = ""
    if reads is not None and path.name.endswith(".py"):
        reads[str(path)] = (len(data), st.st_mtime_ns if st is not None else -1, digest_text,
                            found.candidate)
    # Package `__init__` files are read too: they re-export (`from .ops import *`) without naming a trigger.
    if not any(made) and not (path.name == "__init__.py" and b"import" in data):
        return digest_text, None

    try:
        return digest_text, detect_text(decode(data).text)
    except (SourceError, RecursionError, ValueError):
        return digest_text, None


_ENTRY = (int, int, str, int, (dict, type(None)))


class _IndexCache:
    """display -> [size, mtime_ns, digest, made_ns, record JSON or None], beside the result cache."""

    def __init__(self, anchor: Config) -> None:
        self.root = cache_root(anchor)
        self.build = code_fingerprint()
        self.key = "\n".join((os.getcwd(), str(FORMAT)))
        self.path = self.root / short_name(self.build) / "project" / (short_name(self.key) + ".json")
        self.now_ns = time.time_ns()
        self.entries: Dict[str, list] = {}
        self.kept: Dict[str, list] = {}
        try:
            entries = read_index(self.path.read_bytes(), {"format": FORMAT, "build": self.build, "key": self.key})
        except OSError:
            entries = None
        # [size, mtime_ns, digest, made_ns, wrappers]: a damaged index is an empty one (and written anew).
        self.entries = {k: v for k, v in (entries or {}).items() if row_matches(v, _ENTRY)}
        self.dirty = False

    def record(self, display: str, path: Path, keep: Optional[Known] = None,
               reads: Optional[Dict[str, Read]] = None) -> Optional[FileWrappers]:
        entry = self.entries.get(display)
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not (entry is not None and entry[0] == st.st_size and entry[1] == st.st_mtime_ns
                and st.st_mtime_ns < entry[3] - RACY_NS):
            digest, record = _analyse(path, keep=keep, reads=reads, st=st)
            if not digest:
                return None
            if entry is None or entry[2] != digest:
                entry = [0, 0, digest, 0, record.to_json() if record is not None else None]
            entry[0], entry[1], entry[3] = st.st_size, st.st_mtime_ns, self.now_ns
            self.dirty = True
        self.kept[display] = entry
        try:
            return FileWrappers.from_json(entry[4]) if entry[4] is not None else None
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def save(self) -> None:
        if not self.dirty and len(self.kept) == len(self.entries):
            return

        try:
            ensure_cache_root(str(self.root))
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"format": FORMAT, "build": self.build, "key": self.key,
                                       "sum": entries_sum(self.kept), "entries": self.kept},
                                      separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only tree still lints


# -- resolving ------------------------------------------------------------------------------
class _Resolver:
    def __init__(self, modules: Dict[str, Tuple[FileWrappers, str, str]], anchor: Config, index: ProjectIndex) -> None:
        self.modules = modules
        self.index = index
        self.base: Dict[str, Creator] = {}
        for kind, names in (("vjp", JAX_VJP), ("jvp", JAX_JVP)):
            for name in names:
                self.base[name] = Creator(kind, "nondiff_argnums", (), name, exact=True)
        for kind, aliases in (("vjp", anchor.custom_vjp_aliases), ("jvp", anchor.custom_jvp_aliases)):
            for name, keyword in aliases:
                self.base[name] = Creator(kind, keyword, (), name)
        self.found: Dict[str, Creator] = {}  # "module.name" of a def or class -> the wrapper it is
        self.memo: Optional[Dict[str, Optional[Creator]]] = None  # once `found` is final
        self.module_names = {name.rsplit(".", 1)[-1] for name in modules}

    def run(self) -> None:
        if not self.modules:
            return
        for _ in range(MAX_PASSES):
            changed = False
            for module, (record, package, display) in self.modules.items():
                for name, forwards in record.forwards.items():
                    key = f"{module}.{name}"
                    if key in self.found:
                        continue
                    for forward in forwards:
                        creator = self.resolve(self.absolute(forward.callee, module, package))
                        wrapper = _wrapper_of(forward, creator, key, display) if creator is not None else None
                        if wrapper is not None:
                            self.found[key] = wrapper
                            changed = True
                            break
            if not changed:
                break
        self.memo = {}
        self._spell()

    def absolute(self, name: str, module: str, package: str) -> Optional[str]:
        if name.startswith(SELF + "."):
            return f"{module}.{name[len(SELF) + 1:]}"
        if not name.startswith("."):
            return name
        level = len(name) - len(name.lstrip("."))
        parts = package.split(".") if package else []
        if level - 1 > len(parts) or (level - 1 == len(parts) and not name[level:]):
            return None
        base = parts[:len(parts) - (level - 1)]
        rest = name[level:]
        return ".".join([*base, rest]) if rest else ".".join(base) or None

    def resolve(self, name: Optional[str], depth: int = 0) -> Optional[Creator]:
        if name is None or depth > MAX_DEPTH:
            return None
        if self.memo is not None and name in self.memo:
            return self.memo[name]
        found = self._resolve(name, depth)
        if self.memo is not None:
            self.memo[name] = found
        return found

    def _resolve(self, name: str, depth: int) -> Optional[Creator]:
        found = self.base.get(name) or self.found.get(name)
        if found is not None:
            return found
        if name.startswith("[") and name.endswith("]"):  # a dispatch table entry
            for module, (record, package, _) in self.modules.items():
                target = record.tables.get(name[1:-1])
                if target is not None:
                    found = self.resolve(self.absolute(target, module, package), depth + 1)
                    if found is not None:
                        return found
            return None
        parts = name.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:i])
            entry = self.modules.get(module)
            if entry is None:
                continue
            record, package, _ = entry
            head, rest = parts[i], parts[i + 1:]
            made = INSTANCE if head.endswith(INSTANCE) and not rest and head not in record.forwards else ""
            if made and head[:-len(made)] in record.exports:  # `pkg.Shim()`, `Shim` re-exported by `pkg`
                target = self.absolute(record.exports[head[:-len(made)]], module, package)
                return self.resolve(target + made if target else None, depth + 1)
            if head in record.exports:
                target = self.absolute(record.exports[head], module, package)
                return self.resolve(".".join([target, *rest]) if target else None, depth + 1)
            if not rest and not head.startswith("_") and head not in record.forwards:
                for star in record.star:
                    target = self.absolute(star, module, package)
                    found = self.resolve(f"{target}.{head}", depth + 1) if target else None
                    if found is not None:
                        return found
            return None
        return None

    def _names_that_may_reach_a_creator(self) -> set:
        """Last names of creators and wrappers, and of every name bound to one of those (to a
        fixed point): only these are resolved, instead of every name of every module (JAX's
        `__init__` files re-export thousands)."""
        wanted = {name.rsplit(".", 1)[-1] for name in (*self.base, *self.found)}
        wanted |= {name[:-len(INSTANCE)] for name in wanted if name.endswith(INSTANCE)}  # the class re-exported
        exports = [(name, raw.rsplit(".", 1)[-1]) for record, _, _ in self.modules.values()
                   for name, raw in record.exports.items()]
        grew = True
        while grew:
            size = len(wanted)
            wanted.update(name for name, last in exports if last in wanted)
            grew = len(wanted) > size
        return wanted

    def _spell(self) -> None:
        """Every absolute `module.name` (one re-exported module deep) and, per package, every
        relative spelling that reaches a wrapper or a re-exported JAX creator."""
        spellings = self.index.spellings
        wanted = self._names_that_may_reach_a_creator()
        for module, (record, package, _) in self.modules.items():
            names = (set(record.forwards) | set(record.exports)) & wanted
            for star in record.star:
                target = self.absolute(star, module, package)
                if target in self.modules:
                    starred = self.modules[target][0]
                    names |= {n for n in (*starred.forwards, *starred.exports) if n in wanted and not n.startswith("_")}
            names |= {n + INSTANCE for n in names if not n.endswith(INSTANCE)}  # `@Shim(...)` of a re-exported `Shim`
            for name in names:
                found = self.resolve(f"{module}.{name}")
                if found is not None:
                    spellings[f"{module}.{name}"] = found
                    if not found.exact and name in (*record.forwards, *record.exports):  # used where it is defined
                        self.index.local.setdefault(module, {})[f"{SELF}.{name}"] = found
            for name, raw in record.exports.items():  # `from pkg import ops` re-exports a module: `pkg.ops.w`
                target = self.absolute(raw, module, package) if raw.rsplit(".", 1)[-1] in self.module_names else None
                if target in self.modules:
                    inner = self.modules[target][0]
                    for inner_name in {*inner.forwards, *inner.exports} & wanted:
                        found = self.resolve(f"{target}.{inner_name}")
                        if found is not None:
                            spellings[f"{module}.{name}.{inner_name}"] = found
        for name in list(spellings):
            if name in self.base:
                del spellings[name]
        packages = set(self.index.package_of.values()) - {""}
        for package in packages:
            parts = package.split(".")
            relative: Dict[str, Creator] = {}
            for level in range(1, len(parts) + 1):
                prefix = ".".join(parts[:len(parts) - level + 1]) + "."
                for name, creator in spellings.items():
                    if name.startswith(prefix) and not creator.exact:  # JAX's own: too many to list
                        relative["." * level + name[len(prefix):]] = creator
            if relative:
                self.index.relative[package] = relative


def _wrapper_of(forward: Forward, creator: Creator, key: str, display: str) -> Optional[Creator]:
    """What the def or class `key` is when `forward` calls `creator`, or None when it is not a
    wrapper (its rules are fixed, or it does not pass on the ones its callee needs)."""
    passed = dict(forward.keywords)
    keyword = ""
    if creator.keyword:
        keyword = passed.get(creator.keyword, "")
        if not keyword and creator.exact and len(forward.args) > 1:  # `jax.custom_vjp(f, nondiff_argnums)`
            keyword = forward.args[1]
    if creator.rules:
        mapped = [forward.args[i] if i < len(forward.args) else "" for i in creator.rules]
        if not all(m in forward.params for m in mapped):
            return None
        rules = tuple(forward.params.index(m) for m in mapped)
    elif forward.rules is None:
        return None
    else:
        rules = forward.rules
    shown = f"`{creator.name}`"
    if forward.callee.startswith("["):
        shown += f" (the {forward.callee[1:-1]!r} entry of a dispatch table)"
    trail = f"{shown} at {display}:{forward.line}" + (f", which calls {creator.trail}" if creator.trail else "")
    head, _, tail = key.partition("#")  # `mod#2.w` (ProjectIndex.renamed) is shown as `mod.w`
    named = head + tail[tail.index("."):] if tail else key
    why = (f"through an instance of `{named[:-len(INSTANCE)]}`, whose `__call__` calls {trail}"
           if named.endswith(INSTANCE) else f"through the wrapper `{named}`, which calls {trail}")
    return Creator(creator.kind, keyword, rules, key, why, trail=trail)


def with_wrappers(items: Sequence[Tuple[Path, Config]], anchor: Config, *, use_cache: bool = True,
                  reads: Optional[Dict[str, Read]] = None) -> List[Tuple[Path, Config, RunFacts]]:
    """The run's (file, settings) pairs, each with what the run derives about the file (the
    project's wrappers as aliases, what other modules do with its names). `reads`: see
    `build_index`."""
    index = build_index([path for path, _ in items], anchor, use_cache=use_cache, reads=reads)
    return [(path, config, index.facts_for(config, path)) for path, config in items]
