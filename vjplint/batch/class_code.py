"""The code of the methods `dataclasses` writes for vjplint's classes, compiled once per install and
kept beside the package's .pyc files, not compiled again by every run.

`@dataclass` writes a class's `__init__`, `__repr__`, `__eq__`, `__hash__` (and a frozen class's
`__setattr__` and `__delattr__`) as Python source and compiles it with `exec` when its module is
imported: about 340 compilations on a check of one file, 35-45 ms of its 190 ms (docs/performance.md,
"One file and the cold tree"). `use_kept_code()` gives the `dataclasses` module an `exec` that looks
the source text up in a table read from `vjplint/__pycache__/dataclass-code.<tag>.marshal` (where
Python puts the package's .pyc files, `sys.pycache_prefix` and the interpreter's cache tag
included) and compiles only a text that is not there; `keep()` writes the table back when it grew,
unless bytecode is not written (`-B`, `PYTHONDONTWRITEBYTECODE`). The code is what `compile` makes
of the same text with the same flags, so the classes are the same; a text is the key, so a table of
another build only misses. Only texts compiled for vjplint's own modules are kept. A table that
cannot be read, or is not a mapping of texts to code, counts as empty and is written again.
The file has the trust of the .pyc files beside it (marshal data, like them)."""

import builtins
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Dict, Optional

_CODE = type(compile("", "<string>", "exec"))
_STATE = {"table": None, "grown": False, "path": None, "used": None}  # this process's; one command per process
LIMIT = 5000  # entries; past it a write keeps only those this run used (a build's own are about 400)


def table_path() -> "Optional[str]":
    """Where the table lives: the name a module `vjplint/_dataclass_code.py` would have its .pyc
    under, with `.marshal` for `.pyc` (never taken for a module's bytecode by the import system)."""
    import importlib.util

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # vjplint/
    try:
        pyc = importlib.util.cache_from_source(os.path.join(package, "dataclass-code.py"))
    except (NotImplementedError, ValueError):  # no cache tag: bytecode is not cached at all
        return None
    return pyc[:-len(".pyc")] + ".marshal" if pyc.endswith(".pyc") else None


def _read(path: "Optional[str]") -> "Dict[str, object]":
    if path is None:
        return {}
    try:
        with open(path, "rb") as handle:
            table = marshal.loads(handle.read())  # one read: marshal.load reads a file piece by piece (5x slower)
    except Exception:  # missing, unreadable, cut short, another Python's marshal format: empty
        return {}
    if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, _CODE) for k, v in table.items()):
        return {}
    return table


def _exec(source, globals=None, locals=None):  # noqa: A002 - exec's own parameter names
    """`exec` for `dataclasses`: a text's code from the table when it is there."""
    table = _STATE["table"]
    if not isinstance(source, str) or table is None:
        return builtins.exec(source, globals, locals)
    code = table.get(source)
    if code is not None:
        _STATE["used"].add(source)
    else:
        # dont_inherit: the flags of dataclasses' own frame (none), not this module's
        code = compile(source, "<string>", "exec", dont_inherit=True)
        if isinstance(globals, dict) and str(globals.get("__name__", "")).startswith("vjplint."):
            table[source] = code
            _STATE["used"].add(source)
            _STATE["grown"] = True
    return builtins.exec(code, globals, locals)


def use_kept_code() -> None:
    """From now on, dataclasses made in this process take their methods' code from the table."""
    if _STATE["table"] is not None:
        return
    import dataclasses

    if getattr(dataclasses, "exec", builtins.exec) is not builtins.exec:  # someone else's exec: leave it
        return
    _STATE["path"] = table_path()
    _STATE["table"] = _read(_STATE["path"])
    _STATE["used"] = set()
    dataclasses.exec = _exec


def keep() -> None:
    """Write the table when this run compiled texts it did not hold (atomically; a failure to
    write only means the next run compiles them again)."""
    path = _STATE["path"]
    if not _STATE["grown"] or path is None or sys.dont_write_bytecode:
        return
    _STATE["grown"] = False
    table = _STATE["table"]
    if len(table) > LIMIT:  # texts of older builds: dropped
        table = {text: code for text, code in table.items() if text in _STATE["used"]}
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as handle:
            marshal.dump(table, handle)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
