"""Record the arguments each custom_vjp/custom_jvp receives in the project's own runs, for
`vjplint check-grads` (its inputs before EXAMPLE_ARGS(), call sites and probing).

Two ways in:

* `pytest -p vjplint.record ...`: this module is a pytest plugin;
* `vjplint check-grads --record -- CMD ...`: CMD runs with a `sitecustomize` that loads this file
  (by its path: the recorded process need not be able to import vjplint) in every Python it starts.

Nothing here imports JAX: a hook waits for the recorded program to import `jax`, then wraps
`custom_vjp.__call__` and `custom_jvp.__call__`. Each call is keyed by the undecorated
function's `__module__` and `__qualname__` (`pkg.ops.f`). Kept per function, bounded: up to
MAX_SIGNATURES distinct argument signatures (tree structure, shapes, dtypes, non-array values),
up to MAX_CALLS concrete calls of each (values copied to NumPy; arrays over MAX_ELEMENTS are
kept as shape and dtype only), and traced arguments (under jit or vmap) as shape and dtype only;
under `grad` the concrete values behind the tracers are recorded. At exit each process writes
one pickle into the recording directory (`<cache dir>/recorded/`); check-grads reads them all.
Only the standard library is imported at module level (and `vjplint.batch.cache` by the pytest
plugin, to find the cache directory).
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.util
import os
import pickle
import sys
import threading
import time
from vjplint.batch.cache import cache_root
from vjplint.batch.fastpath import ensure_cache_root
from vjplint.project.workspace import Overrides, Workspace

ENV = "VJPLINT_RECORD_DIR"
SUBDIR = "recorded"
MAX_SIGNATURES = 4
MAX_CALLS = 3
MAX_ELEMENTS = 100_000
FORMAT = 1

_records = {}  # key -> {"signatures": {sig: {"calls": [bytes], "abstract": bool, "count": int}}}
_lock = threading.Lock()
_state = {"directory": None, "installed": False, "written": False}


# -- the hook --------------------------------------------------------------------------------------
def install(directory):
    """Record this process's custom_vjp/custom_jvp calls into `directory` (written at exit)."""
    _state["directory"] = directory
    if _state["installed"]:
        return
    _state["installed"] = True
    atexit.register(write)
    waiting = False
    for name in HOOKS:
        if name in sys.modules:
            _run_hook(name)
        else:
            waiting = True
    if waiting:
        sys.meta_path.insert(0, _Imported())


def _user_function_of_filter_custom_jvp(obj):
    """equinox's filter_custom_jvp: `self.fn = jax.custom_jvp(fn_wrapper)`, fn_wrapper closing over fn."""
    wrapper = getattr(getattr(obj, "fn", None), "fun", None)
    code, cells = getattr(wrapper, "__code__", None), getattr(wrapper, "__closure__", None)
    if code is None or not cells or "fn" not in code.co_freevars:
        return None
    return cells[code.co_freevars.index("fn")].cell_contents


# Library wrappers whose jax.custom_vjp/custom_jvp wraps an internal function with rearranged
# arguments: their calls are recorded under the user's function, with the arguments the user
# passed (what check-grads calls the derivative, and what it calls it with).
WRAPPERS = {
    "equinox._ad": (("filter_custom_vjp", lambda obj: getattr(obj, "fn", None)),
                    ("filter_custom_jvp", _user_function_of_filter_custom_jvp)),
    "flax.nnx.transforms.autodiff": (("CustomVjp", lambda obj: getattr(obj, "fun", None)),
                                     ("SimpleCustomVjp", lambda obj: getattr(obj, "fun", None))),
}


def _patch_wrappers(module_name):
    module = sys.modules.get(module_name)
    for class_name, user_function in WRAPPERS[module_name]:
        cls = getattr(module, class_name, None)
        original = getattr(cls, "__call__", None)
        if original is not None and not getattr(original, "_vjplint_records", False):
            cls.__call__ = _recording_call(original, user_function)


def _recording_call(original, user_function):
    def __call__(*args, **kwargs):  # no named `self`: diffrax passes `self=` to its filter_custom_vjp
        try:
            fun = user_function(args[0])
            if fun is not None:
                _note_function(fun, args[1:], kwargs)
        except Exception:  # recording must never change what the program does
            pass
        return original(*args, **kwargs)
    __call__._vjplint_records = True
    __call__.__wrapped__ = original
    return __call__


HOOKS = {"jax": lambda name: _patch(), **{name: _patch_wrappers for name in WRAPPERS}}


def _run_hook(name):
    if name in _state.setdefault("hooked", set()):
        return
    _state["hooked"].add(name)
    HOOKS[name](name)


class _Imported(importlib.abc.MetaPathFinder):
    """Patches JAX's custom derivative classes once `import jax` has run, and the library
    wrappers (WRAPPERS) once their modules have."""

    busy = False

    def find_spec(self, name, path=None, target=None):
        if name not in HOOKS or self.busy or name in _state.get("hooked", ()):
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, run = spec.loader, spec.loader.exec_module

        def exec_module(module):
            try:
                run(module)
            finally:
                loader.exec_module = run
            try:
                _run_hook(name)
            except Exception:
                pass
        loader.exec_module = exec_module
        return spec


def _patch():
    from jax._src import custom_derivatives as cd

    for cls in (cd.custom_vjp, cd.custom_jvp):
        original = cls.__call__
        if getattr(original, "_vjplint_records", False):
            continue

        def __call__(self, *args, __original=original, **kwargs):
            try:
                _note(self, args, kwargs)
            except Exception:  # recording must never change what the program does
                pass
            return __original(self, *args, **kwargs)
        __call__._vjplint_records = True
        __call__.__wrapped__ = original
        cls.__call__ = __call__


def _note(derivative, args, kwargs):
    _note_function(derivative.fun, args, kwargs)


def _note_function(fun, args, kwargs):
    import jax
    import numpy as np

    name = getattr(fun, "__qualname__", None)
    if not isinstance(name, str) or "<locals>" in name:
        return  # check-grads cannot reach a function defined inside another one (or a callable object)
    key = "{}.{}".format(getattr(fun, "__module__", "?"), name)
    if kwargs:
        import inspect

        bound = inspect.signature(fun).bind(*args, **kwargs)
        if bound.kwargs:
            return
        args = bound.args
    leaves, treedef = jax.tree_util.tree_flatten(args)
    values, parts, abstract = [], [], False  # first the signature (shapes only: nothing is copied yet)
    for leaf in leaves:
        if isinstance(leaf, jax.core.Tracer):
            value = leaf.to_concrete_value() if hasattr(leaf, "to_concrete_value") else None
            if value is None:
                abstract = True
                parts.append("{}{}".format(leaf.aval.dtype, list(leaf.aval.shape)))
                values.append(_Abstract(tuple(leaf.aval.shape), str(leaf.aval.dtype)))
                continue
            leaf = value
        if isinstance(leaf, (float, int)) and type(leaf) not in (float, int, bool) and hasattr(leaf, "dtype"):
            leaf = np.asarray(leaf, dtype=str(leaf.dtype))  # JAX's typed Python scalars: keep the dtype
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            parts.append("{}{}".format(leaf.dtype, list(leaf.shape)))
            if int(np.size(leaf)) > MAX_ELEMENTS:
                abstract = True
                leaf = _Abstract(tuple(np.shape(leaf)), str(leaf.dtype))
        else:
            parts.append(repr(leaf)[:80] if isinstance(leaf, (bool, int, float, complex, str)) or leaf is None
                         else type(leaf).__qualname__)
        values.append(leaf)
    signature = "{}|{}".format(treedef, ",".join(parts))
    with _lock:
        entry = _records.setdefault(key, {"signatures": {}})
        sigs = entry["signatures"]
        slot = sigs.get(signature)
        if slot is None:
            if len(sigs) >= MAX_SIGNATURES:
                return
            slot = sigs[signature] = {"calls": [], "abstract": abstract, "count": 0}
        slot["count"] += 1
        if len(slot["calls"]) >= (1 if slot["abstract"] else MAX_CALLS):
            return
    concrete = [np.array(v) if hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, _Abstract) else v
                for v in values]
    try:
        data = pickle.dumps(jax.tree_util.tree_unflatten(treedef, concrete), protocol=4)
    except Exception:  # a lambda, a lock, ...: the shapes are still known
        data = None
    with _lock:
        if data is not None and len(slot["calls"]) < MAX_CALLS:
            slot["calls"].append(data)


class _Abstract:
    """An argument recorded as shape and dtype only (traced, or too large)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype

    def __repr__(self):
        return "{}{}".format(self.dtype, list(self.shape))

    def __reduce__(self):  # pickled as a tuple: loading needs no vjplint
        return (tuple, (("__vjplint_abstract__", self.shape, self.dtype),))


def write():
    """This process's records, as one pickle file in the recording directory."""
    directory = _state["directory"]
    with _lock:
        records = {k: v for k, v in _records.items() if v["signatures"]}
    if not directory or not records:
        return
    try:
        os.makedirs(directory, exist_ok=True)
        name = os.path.join(directory, "{}-{}.pkl".format(os.getpid(), int(time.time() * 1000)))
        with open(name + ".tmp", "wb") as handle:
            pickle.dump({"format": FORMAT, "argv": sys.argv[:4], "records": records}, handle, protocol=4)
        os.replace(name + ".tmp", name)
        with _lock:
            _records.clear()  # written once (pytest_unconfigure, then atexit)
    except OSError:
        pass


def clear(directory):
    """Remove earlier recordings (a new recording run replaces them)."""
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            if name.endswith((".pkl", ".tmp")):
                try:
                    os.remove(os.path.join(directory, name))
                except OSError:
                    pass


# -- reading (check-grads) ---------------------------------------------------------------------------
def read(directory):
    """{key: [(signature, count, [pickled call, ...], abstract)]}: every process's records merged,
    the most frequent signature first. Reads only the pickles' outer layer (the calls stay bytes)."""
    merged = {}
    if not os.path.isdir(directory):
        return {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".pkl"):
            continue
        try:
            with open(os.path.join(directory, name), "rb") as handle:
                data = pickle.load(handle)
        except Exception:
            continue
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            continue
        for key, entry in data.get("records", {}).items():
            sigs = merged.setdefault(key, {})
            for sig, slot in entry["signatures"].items():
                have = sigs.setdefault(sig, {"calls": [], "abstract": slot["abstract"], "count": 0})
                have["count"] += slot["count"]
                have["calls"].extend(slot["calls"][:MAX_CALLS - len(have["calls"])])
    return {key: sorted(((sig, s["count"], s["calls"], s["abstract"]) for sig, s in sigs.items()),
                        key=lambda item: (item[3], -len(item[2]), -item[1]))
            for key, sigs in merged.items()}


# -- pytest -p vjplint.record ------------------------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--vjplint-record-dir", default=None,
                     help="where vjplint.record writes the recorded custom_vjp/custom_jvp arguments "
                          "(default: $VJPLINT_RECORD_DIR, else <cache dir>/recorded of the nearest pyproject.toml)")


def pytest_configure(config):
    directory = config.getoption("--vjplint-record-dir") or os.environ.get(ENV)
    if not directory:
        directory = default_directory(str(config.rootpath))
        if not os.environ.get("PYTEST_XDIST_WORKER"):
            clear(directory)
        os.environ[ENV] = directory  # xdist workers and subprocesses record into the same place
    install(directory)


def pytest_unconfigure(config):
    write()


def default_directory(start):
    """<cache dir>/recorded for the settings that apply at `start` (as `vjplint check-grads` finds them)."""
    root = cache_root(Workspace(Overrides(), None).anchor([start]))
    ensure_cache_root(str(root))
    return str(root / SUBDIR)


# -- `vjplint check-grads --record -- CMD`: loaded by path from a generated sitecustomize ----------------
SITECUSTOMIZE = '''\
# Written by `vjplint check-grads --record`: record custom_vjp/custom_jvp arguments in this process.
import importlib.machinery, importlib.util, os, sys

_here = os.path.dirname(os.path.abspath(__file__))
try:
    _spec = importlib.util.spec_from_file_location("_vjplint_record", {path!r})
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    sys.modules["_vjplint_record"] = _module
    _module.install(os.environ[{env!r}])
except Exception as _exc:
    sys.stderr.write("vjplint: warning: cannot record in this process: %r\\n" % (_exc,))
# Then the sitecustomize this one hides, if any.
_saved = sys.modules.pop("sitecustomize", None)
try:
    _other = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here])
    if _other is not None:
        _other_module = importlib.util.module_from_spec(_other)
        _other.loader.exec_module(_other_module)
finally:
    if _saved is not None:
        sys.modules["sitecustomize"] = _saved
'''


def sitecustomize_dir(temp):
    """A directory holding the sitecustomize that loads this file: put it first on PYTHONPATH."""
    path = os.path.join(temp, "sitecustomize.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(SITECUSTOMIZE.format(path=os.path.abspath(__file__), env=ENV))
    return temp
