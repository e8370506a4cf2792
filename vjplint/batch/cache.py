"""The result cache: per-file diagnostics keyed by content hash, tool version and configuration.

Layout: `<cache dir>/.gitignore` (`*`, like ruff's) and one index file per (tool fingerprint,
Python version, working directory) under `<cache dir>/<version>/`. The index maps a file's
display path to its size, mtime, SHA-256, the fingerprint of the settings it was linted with
(files of one run may use different pyproject.toml files) and its result. A file whose size and mtime
match is trusted without being read (ruff's rule), except when its mtime is too close to the
moment the entry was made to rule out a same-size edit in the same clock tick ("racy git"):
then its content hash decides. A changed mtime with an unchanged hash also reuses the entry.

The format is JSON, never pickle: a cache directory that came with a cloned repository must not
be able to run code. Only the classes of `vjplint.diagnostics` are revived.
"""

from __future__ import annotations

import collections.abc
import json
import os
import time
import typing
from dataclasses import fields, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from vjplint.settings.config import Config
from vjplint.settings.cache_files import CACHE_DIR_NAME, code_fingerprint, ensure_cache_root, row_matches, short_name  # noqa: F401 - shared with the replay
from vjplint.settings.config import cache_root  # noqa: F401 - the cache's users import it from here too
from vjplint import diagnostics
from vjplint import diagnostics as diagnostics_module  # `diagnostics` is also a local name below

FORMAT = 2
# An entry's stat is trusted only for files last modified this long before the entry was made.
RACY_NS = 2_000_000_000
STALE_BUILD_S = 7 * 24 * 3600


# -- (de)serialising results ----------------------------------------------------------------
def _allowed() -> Dict[str, type]:
    return {name: obj for name, obj in vars(diagnostics).items()
            if isinstance(obj, type) and obj.__module__ == diagnostics.__name__}


def encode(value: Any) -> Any:
    """JSON-ready form of diagnostics; tuples, enums and dataclasses are tagged. Raises TypeError
    for anything else (that result is then simply not cached)."""
    if isinstance(value, Enum):
        return {"$e": type(value).__name__, "v": value.value}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return {"$d": type(value).__name__, "f": {f.name: encode(getattr(value, f.name)) for f in fields(value)
                                                  if not f.metadata.get(diagnostics.CARRIED)}}
    if isinstance(value, tuple):
        return {"$t": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    raise TypeError(f"cannot cache a {type(value).__name__}")


def decode(value: Any, allowed: Dict[str, type]) -> Any:
    if isinstance(value, list):
        return [decode(v, allowed) for v in value]
    if not isinstance(value, dict):
        return value
    if "$t" in value:
        return tuple(decode(v, allowed) for v in value["$t"])
    kind = allowed[value["$e"] if "$e" in value else value["$d"]]  # KeyError: a foreign entry
    if "$e" in value:
        return kind(value["v"])
    return kind(**{k: decode(v, allowed) for k, v in value["f"].items()})


def conforms(value: Any, hint: Any) -> bool:
    """Whether a decoded value has the type its dataclass field declares (`hint`), recursively:
    a record of the right tags can still hold a string where a row belongs."""
    if hint is Any or isinstance(hint, typing.TypeVar):
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        return any(conforms(value, a) for a in args)
    if origin is typing.ClassVar:
        return True
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return len(args) == len(value) and all(conforms(v, a) for v, a in zip(value, args))
    if origin in (list, collections.abc.Sequence):
        return isinstance(value, (list, tuple)) and all(conforms(v, args[0]) for v in value) if args else True
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, collections.abc.Mapping) and (not args or all(
            conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items()))
    if hint is type(None) or hint is None:
        return value is None
    if not isinstance(hint, type):
        return True  # a hint this check does not read (a Literal, a Protocol...): the constructor judged
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if not isinstance(value, hint):
        return False
    if is_dataclass(value):
        hints = _hints(type(value))
        return all(conforms(getattr(value, f.name), hints.get(f.name, Any)) for f in fields(value))
    return True


_HINTS: Dict[type, Dict[str, Any]] = {}


def _hints(kind: type) -> Dict[str, Any]:
    if kind not in _HINTS:
        _HINTS[kind] = typing.get_type_hints(kind, vars(diagnostics))
    return _HINTS[kind]


# An entry: size, mtime_ns, sha256, analysed, diagnostics, made_ns, settings fingerprint.
ENTRY = (int, int, str, bool, list, int, str)


# -- the index ------------------------------------------------------------------------------
class ResultCache:
    """Load once, look up and store per file, save once (atomically) at the end of a run."""

    def __init__(self, config: Config, root: Optional[Path] = None) -> None:
        self.root = root or cache_root(config)
        self.build = code_fingerprint()
        self.key = "\n".join((os.getcwd(), str(FORMAT)))
        self.path = self.root / short_name(self.build) / (short_name(self.key) + ".json")
        # display -> [size, mtime_ns, sha256, analysed, diagnostics, made_ns, settings fingerprint]
        self.entries: Dict[str, list] = {}
        self.now_ns = time.time_ns()  # before any file is stat'ed or read
        self.dirty = False
        self._allowed: Optional[Dict[str, type]] = None
        try:
            data = json.loads(self.path.read_bytes())
        except (OSError, ValueError, RecursionError):
            data = None  # a missing or unreadable index is an empty one
        if (isinstance(data, dict) and data.get("format") == FORMAT and data.get("build") == self.build
                and data.get("key") == self.key and isinstance(data.get("entries"), dict)):
            # A damaged entry is dropped (and its file linted again); a damaged index is an empty one.
            self.entries = {k: v for k, v in data["entries"].items() if isinstance(v, list) and row_matches(v, ENTRY)}
            self.dirty = len(self.entries) != len(data["entries"])  # written back without them

    def fresh_by_stat(self, display: str, st: os.stat_result, settings: str) -> Optional[list]:
        """The entry when size, mtime and settings match and the mtime is safely older than the entry."""
        entry = self.entries.get(display)
        if (entry is not None and entry[0] == st.st_size and entry[1] == st.st_mtime_ns
                and st.st_mtime_ns < entry[5] - RACY_NS and entry[6] == settings):
            return entry
        return None

    def fresh_by_hash(self, display: str, digest: str, st: os.stat_result, settings: str) -> Optional[list]:
        entry = self.entries.get(display)
        if entry is None or entry[2] != digest or entry[6] != settings:
            return None
        if entry[0] != st.st_size or entry[1] != st.st_mtime_ns:
            entry[0], entry[1], entry[5] = st.st_size, st.st_mtime_ns, self.now_ns
            self.dirty = True
        return entry

    def result_of(self, entry: list) -> Tuple[bool, List[Any]]:
        """(analysed, diagnostics) from an entry."""
        if self._allowed is None:
            self._allowed = _allowed()
        analysed, diagnostics = entry[3], entry[4]
        found = decode(diagnostics, self._allowed) if diagnostics else []
        if not all(isinstance(d, diagnostics_module.Diagnostic) and conforms(d, diagnostics_module.Diagnostic)
                   for d in found):
            raise ValueError("a cached result of the wrong type")
        return analysed, found

    def store(self, display: str, st: os.stat_result, digest: str, analysed: bool, diagnostics: List[Any],
              settings: str) -> None:
        try:
            encoded = encode(diagnostics)
        except TypeError:
            self.entries.pop(display, None)
            return
        self.entries[display] = [st.st_size, st.st_mtime_ns, digest, analysed, encoded, self.now_ns, settings]
        self.dirty = True

    def save(self, seen: set) -> None:
        """Write the index when anything changed; drop entries of files that no longer exist."""
        for display in [d for d in self.entries if d not in seen]:
            if not os.path.exists(display):
                del self.entries[display]
                self.dirty = True
        if not self.dirty:
            return
        try:
            _ensure_root(self.root)
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(parents=True)
                _prune_other_builds(self.root, keep=self.path.parent)
            payload = json.dumps({"format": FORMAT, "build": self.build, "key": self.key, "entries": self.entries},
                                 separators=(",", ":"), ensure_ascii=False)
            import tempfile

            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".index-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(payload)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass  # a read-only tree still lints; it just stays cold
        self.dirty = False


def _prune_other_builds(root: Path, keep: Path) -> None:
    """Drop the indexes of tool builds unused for a week (each edit of a development checkout
    is a build of its own)."""
    import shutil

    cutoff = time.time() - STALE_BUILD_S
    for directory in root.iterdir():
        try:
            if directory != keep and directory.is_dir() and directory.stat().st_mtime < cutoff:
                shutil.rmtree(directory, ignore_errors=True)
        except OSError:
            pass


def _ensure_root(root: Path) -> None:
    ensure_cache_root(str(root))


def content_hash(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()
