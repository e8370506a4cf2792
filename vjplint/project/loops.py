"""Which functions of the run's modules feed a parameter into `lax.while_loop`, told to the
modules with custom_jvp rules that import them (VJP601 follows a tangent into such a helper:
vjplint.facts.loops). Rows ("loop", the name as the importer spells it, ...) join the importer's
`RunFacts.rows` (vjplint.model.run_facts), so its cached result follows a change in the helper.

Per file, kept in the value summaries' cache entry (vjplint.project.cross_values, the Language Server's
vjplint.server.project_index) as a small dict: from its bytes, "j" and "c", the words of its import
lines and the names it calls (`name(`), when it has a custom_jvp, and "w", its top-level functions
whose text may reach a `while_loop`; "l", its loop summary (`exported_loops`), made only once an
importer's words name the module and it calls one of those functions; "k"/"r", what an importer
imports of the run's summarised functions, for the digest "k" of their names. A cold run parses
only those helpers and their importers.
"""
from __future__ import annotations

import hashlib
import re
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple
from vjplint.facts.crossmodule import absolute
from vjplint.facts.loops import exported_loops
from vjplint.project.rule_defs import rule_info
from vjplint.project.text import creators, imported_words, parse
from vjplint.syntax.walk import walk

IMPORTER = b"custom_jvp"  # VJP601's trigger: where a jvp rule may hand a tangent to a helper
LOOP = b"while_loop"

Info = Dict[str, object]


def file_info(data: bytes, made: Optional[Tuple[bool, bool]] = None, registers: Optional[bool] = None) -> Info:
    """What the bytes alone say (no parse). `made`: `creators(data)`, `registers`: whether
    `defvjp` or `defjvp` occurs, when known (vjplint.project.text.scan)."""
    info: Info = {}
    if (made if made is not None else creators(data))[1] and b"import" in data:  # IMPORTER (custom_jvp) in data
        info["j"] = sorted(w.decode("utf-8", "replace") for w in imported_words(data))
        info["c"] = sorted(w.decode("utf-8", "replace") for w in _called(data))
    if LOOP in data:
        info["w"] = sorted(_reaching_text(data))
    if registers is None:
        registers = b"defvjp" in data or b"defjvp" in data
    if registers:  # `rule_info` reads registrations only: none without `defvjp`/`defjvp`
        info.update(rule_info(data, registers))  # registers rules, or on a primal, defined elsewhere (vjplint.project.rule_defs)
    return info


# `name(` read backwards: a pattern that starts with a literal is searched for, not tried at
# every position (ten times faster on a large module).
_CALLED_BACKWARDS = re.compile(rb"\([ \t]*(\w+)")


def _called(data: bytes) -> Set[bytes]:
    """The names the text calls: `f(`, `mod.f (` give `f`."""
    return {w[::-1] for w in _CALLED_BACKWARDS.findall(data[::-1])}


_TOP = re.compile(rb"^(?:(?:async[ \t]+)?def[ \t]+(\w+)|[^\s#)\]}])", re.MULTILINE)
_CODE_LINE = re.compile(rb"\n(?=[^\s#)\]}])")  # a line start `_TOP` can match at, found by its "\n"


def _top_matches(data: bytes) -> List["re.Match[bytes]"]:
    """What `_TOP.finditer(data)` finds (its matches start a line and end within it), tried only
    where a line starts with code: finditer tries `^` at every byte."""
    found = []
    m = _TOP.match(data, 0)
    if m is not None:
        found.append(m)
    for line in _CODE_LINE.finditer(data):
        m = _TOP.match(data, line.end())
        if m is not None:
            found.append(m)
    return found


def _reaching_text(data: bytes) -> Set[str]:
    """The top-level functions whose text may reach a while_loop: it names one, or calls one of
    these (by name). Read from the bytes, to parse only the modules an importer may need. A
    function's calls are read only once its text holds the name of one that reaches."""
    segments: Dict[bytes, bytes] = {}
    found = _top_matches(data)
    for m, after in zip(found, found[1:] + [None]):
        if m.group(1):
            segments[m.group(1)] = data[m.end():after.start() if after is not None else len(data)]
    reach = {name for name, text in segments.items() if LOOP in text}
    calls: Dict[bytes, Set[bytes]] = {}
    new = set(reach)
    while new:
        added = set()
        for name, text in segments.items():
            if name in reach or not any(r in text for r in new):  # `r(` holds r
                continue
            if name not in calls:
                calls[name] = _called(text) & segments.keys()
            if not calls[name].isdisjoint(new):
                added.add(name)
        reach |= added
        new = added
    return {name.decode("utf-8", "replace") for name in reach}


# What an import binding `jax`, `jax.lax` or `jax.lax.while_loop` must spell (import lists joined
# by commas and backslashes included): without one, no call is a while_loop (vjplint.facts.loops).
_JAX_IMPORT = re.compile(rb"(?:import|,)[\s\\]*jax\b|from[\s\\]+jax(?:[\s\\]*\.[\s\\]*lax)?[\s\\]+import\b")


def file_loops(data: bytes, display: str, parsed: Optional[Dict[str, object]] = None) -> Dict[str, list]:
    """`parsed`: where to leave the module's parse (by display), for a later reader of it. A module
    none of whose text can import jax (an ASCII one: a non-ASCII identifier may spell `jax`
    otherwise) has no summary (`exported_loops` would find no while_loop), and is not parsed."""
    if data.isascii() and _JAX_IMPORT.search(data) is None:
        return {}
    found = parse(data)
    if parsed is not None and found is not None:
        parsed[display] = found
    return exported_loops(found[0], found[1], display) if found is not None else {}


def file_refs(data: bytes, package: str, targets: Set[str]) -> List[List[str]]:
    """[spelling, absolute] for each of `targets` (`pkg.mod.f`) the module imports, the spelling
    being what `SemanticIndex.qualname` makes of a call of it there (`.mod.f` when imported
    relatively)."""
    import ast

    found = parse(data)
    if found is None:
        return []
    targets = {t for t in targets if t.rpartition(".")[2] in found[2]}  # those it can call at all
    refs: Dict[str, str] = {}
    for node in walk(found[0]):
        if isinstance(node, ast.Import):
            for alias in node.names:  # `import pkg.mod as m; m.f(...)`: qualname `pkg.mod.f`
                refs.update((t, t) for t in targets if t.startswith(alias.name + "."))
        elif isinstance(node, ast.ImportFrom):
            raw = "." * (node.level or 0) + (node.module or "")
            base = absolute(raw, package)
            if base is None:
                continue
            for alias in node.names:
                spelled = f"{raw}.{alias.name}" if node.module else f"{raw}{alias.name}"
                whole = f"{base}.{alias.name}"
                for t in targets:
                    if t == whole:
                        refs[spelled] = t
                    elif t.startswith(whole + "."):  # `from pkg import mod; mod.f(...)`
                        refs[spelled + t[len(whole):]] = t
    return [[s, t] for s, t in sorted(refs.items())]


def loop_rows(files: Sequence[Tuple[str, str, str]], infos: Dict[str, Info],
              read: Callable[[str], Optional[bytes]],
              parsed: Optional[Dict[str, object]] = None) -> Dict[str, List[tuple]]:
    """module -> its "loop" rows. `files` holds (module, package, display); `infos` maps a display
    to its `file_info` dict, completed here ("l", "k", "r") by reading files through `read`. The
    helper modules parsed for their summaries are left in `parsed` (by display)."""
    importers = [f for f in files if "j" in infos.get(f[2], {})]
    if not importers:
        return {}
    # (the words of its import lines, its package, the names it calls) per importer
    seen = [(set(infos[d]["j"]), p, set(infos[d].get("c", ()))) for _, p, d in importers]  # type: ignore[arg-type]
    targets: Dict[str, Tuple[str, str, list]] = {}  # absolute -> (display, name, [line, params])
    for module, _, display in files:
        info = infos.get(display, {})
        reaching = info.get("w")
        if not reaching or not any(_may_import(module, words, package) and not called.isdisjoint(reaching)
                                   for words, package, called in seen):  # type: ignore[arg-type]
            continue
        if "l" not in info:
            data = read(display)
            info["l"] = file_loops(data, display, parsed) if data is not None else {}
        for name, summary in info["l"].items():  # type: ignore[attr-defined]
            targets[f"{module}.{name}"] = (display, name, summary)
    if not targets:
        return {}
    key = hashlib.sha256("\n".join(sorted(targets)).encode()).hexdigest()[:16]
    heads = {t.rsplit(".", 2)[-2] for t in targets}  # the modules' last parts
    out: Dict[str, List[tuple]] = {}
    for module, package, display in importers:
        info = infos[display]
        if not heads.intersection(info["j"]):  # type: ignore[arg-type]
            continue
        if info.get("k") != key:
            data = read(display)
            info["r"], info["k"] = (file_refs(data, package, set(targets)) if data is not None else []), key
        for spelled, target in info["r"]:  # type: ignore[attr-defined]
            if target in targets and target.rpartition(".")[0] != module:
                shown, name, (line, params) = targets[target]
                out.setdefault(module, []).append(
                    ("loop", spelled, name, shown, line, tuple(
                        (p, position, loop, where, tuple(chain)) for p, position, loop, where, chain in params)))
    return out


def _may_import(module: str, words: Set[str], package: str) -> bool:
    """Whether a module whose import lines hold `words` (in `package`) may import `module`:
    every part of its dotted name is among them, or its last part is and it can be a relative
    import (`from . import mod`, `from .mod import f`: the two share their top package)."""
    parts = module.split(".")
    if parts[-1] not in words:
        return False
    if words.issuperset(parts):
        return True
    return len(parts) > 1 and package.split(".")[0] == parts[0]
