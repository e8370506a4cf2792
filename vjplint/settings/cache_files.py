"""The cache's file names: where vjplint keeps per-file results and replays (the CLI's fast path,
the batch runner, the project index). Only `os` and `sys` are imported here, as in
vjplint.batch.fastpath, which reads these before anything else."""

from __future__ import annotations

import os
import sys
from functools import lru_cache  # functools: imported by Python's own start-up already

from vjplint import __version__

CACHE_DIR_NAME = ".vjplint_cache"


@lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """The version plus the size and mtime of every vjplint module, so that an edited rule in a
    development checkout never reads results its old code produced. Once per process: the code
    a process runs is the code it imported (a walk and 240 stats, asked 7 times by a pre-commit
    run on one file: 27 ms)."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # vjplint/, not vjplint/settings/
    parts = [__version__, sys.version.split()[0]]
    for directory, _, names in sorted(os.walk(package)):
        for name in sorted(names):
            if name.endswith(".py"):
                st = os.stat(os.path.join(directory, name))
                parts.append(f"{os.path.relpath(os.path.join(directory, name), package)}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


def short_name(text: str) -> str:
    """A short file name for a long key. The key itself is stored and compared on load, so a
    collision only costs a cold run, never a wrong result (and no hashlib import)."""
    import zlib

    return f"{zlib.crc32(text.encode('utf-8', 'surrogatepass')):08x}"


def ensure_cache_root(root: str) -> None:
    """The cache directory, with a .gitignore of `*` (ruff's) and a CACHEDIR.TAG."""
    os.makedirs(root, exist_ok=True)
    ignore = os.path.join(root, ".gitignore")
    if not os.path.exists(ignore):
        with open(ignore, "w", encoding="utf-8") as handle:
            handle.write("# Automatically created by vjplint.\n*\n")
    tag = os.path.join(root, "CACHEDIR.TAG")
    if not os.path.exists(tag):
        with open(tag, "w", encoding="utf-8") as handle:
            handle.write("Signature: 8a477f597d28d172789f06886806bc55\n"
                         "# This file is a cache directory tag created by vjplint.\n")


# -- reading records back: any JSON may sit in a damaged or foreign file ------------------------
def entries_sum(entries: object) -> str:
    """A checksum of an index's entries as written (compact JSON, keys in order), kept beside them
    so that a damaged entry whose JSON still parses (a row cut short, a list where a dict was)
    makes the whole index count as empty instead of reaching the analysis."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(entries, separators=(",", ":")).encode("utf-8", "surrogatepass")).hexdigest()


def read_index(raw: bytes, expected: dict) -> "dict | None":
    """The entries of an index file, or None when it is not a JSON object whose header fields equal
    `expected` (format, build, key), whose entries are an object of lists and whose checksum holds."""
    import json

    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or any(data.get(k) != v for k, v in expected.items()):
        return None
    entries = data.get("entries")
    if not isinstance(entries, dict) or not all(isinstance(v, list) for v in entries.values()):
        return None
    try:
        if data.get("sum") != entries_sum(entries):
            return None
    except (ValueError, RecursionError):
        return None
    return entries


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def row_matches(row: list, kinds: tuple) -> bool:
    """Whether a cache row has one value per kind, each an instance of it (`int` never a bool;
    a tuple of kinds: any of them)."""
    if len(row) != len(kinds):
        return False
    for value, kind in zip(row, kinds):
        allowed = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in allowed:
            return False
        if not isinstance(value, allowed):
            return False
    return True
