"""The recording itself: a hook waits for the recorded program to import `jax` (and the library
wrappers of WRAPPERS), then wraps `custom_vjp.__call__` and `custom_jvp.__call__`; each call is
noted under its definition (file and first line of its code) with a bounded sample of its
arguments (vjplint.record.sampling). At exit the records are written as one pickle per process
(`write`), then the process checks what it called (vjplint.record.live). `read` merges every
process's pickles for check-grads."""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.util
import os
import pickle
import re
import sys
import threading
import time

from .live import check_live, write_raises
from .sampling import (FORMAT, MAX_BYTES, MAX_CALLS, MAX_DEFINITIONS, MAX_ELEMENTS, MAX_KEPT, MAX_OBJECTS,
                       MAX_SIGNATURES, _Abstract, _summary, _thin, signature_order, spread)

ENV = "VJPLINT_RECORD_DIR"
SUBDIR = "recorded"

# (file, first line, name) -> {"fun", "kind", "key", "objects": [live objects], "signatures": {sig: slot}};
# a slot: {"kept": [(position, args)], "count", "digests", "shapes" (a traced call's, until a concrete one)}
_defs = {}
_lock = threading.Lock()
_state = {"directory": None, "installed": False, "written": False, "bytes": 0, "checked": False, "raises": []}
MAX_RAISES = 64  # exceptions kept per process (note_raise)
MAX_CALLERS = 8  # the module's own functions whose arguments are kept per definition (_note_callers)


# -- the hook --------------------------------------------------------------------------------------
def install(directory):
    """Record this process's custom_vjp/custom_jvp calls into `directory` (written at exit)."""
    _state["directory"] = directory
    if _state["installed"]:
        return
    _state["installed"] = True
    atexit.register(write)
    _hook_excepthook()
    waiting = False
    for name in HOOKS:
        if name in sys.modules:
            _run_hook(name)
        else:
            waiting = True
    if waiting:
        sys.meta_path.insert(0, _Imported())


def _at_exit():
    write()
    try:
        write_raises(_state)
    except Exception:
        pass
    try:
        check_live(_defs, _lock, _state, replay)
    except Exception:
        pass


def note_raise(exc):
    """An exception that escaped a test (the pytest plugin) or the program (sys.excepthook): its
    frames outside installed packages, innermost last, so that check-grads can tell a definition
    whose creation or rule registration raised where the run called its factory (nothing was
    called, so nothing else is recorded of it). Bounded (MAX_RAISES); never raises."""
    if _state["checked"] or exc is None:
        return
    try:
        import traceback

        frames = []
        for frame in traceback.extract_tb(exc.__traceback__):
            name = frame.filename or ""
            if name.startswith("<") or not isinstance(frame.lineno, int):
                continue
            real = os.path.realpath(name)
            if not any(part in ("site-packages", "dist-packages") for part in real.split(os.sep)):
                frames.append((real, frame.lineno))
        if not frames:
            return
        detail = "{}: {}".format(type(exc).__name__, exc)
        with _lock:
            if len(_state["raises"]) < MAX_RAISES:
                _state["raises"].append({"frames": frames[-8:], "detail": detail[:600]})
    except Exception:
        pass


def _hook_excepthook():
    previous = sys.excepthook

    def excepthook(kind, value, tb, __previous=previous):
        note_raise(value)
        return __previous(kind, value, tb)
    sys.excepthook = excepthook


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
    "equinox._ad": (("filter_custom_vjp", lambda obj: getattr(obj, "fn", None), "vjp"),
                    ("filter_custom_jvp", _user_function_of_filter_custom_jvp, "jvp")),
    "flax.nnx.transforms.autodiff": (("CustomVjp", lambda obj: getattr(obj, "fun", None), "vjp"),
                                     ("SimpleCustomVjp", lambda obj: getattr(obj, "fun", None), "vjp")),
}


def _patch_wrappers(module_name):
    module = sys.modules.get(module_name)
    for class_name, user_function, kind in WRAPPERS[module_name]:
        cls = getattr(module, class_name, None)
        original = getattr(cls, "__call__", None)
        if original is not None and not getattr(original, "_vjplint_records", False):
            cls.__call__ = _recording_call(original, user_function, kind)


def _recording_call(original, user_function, kind):
    def __call__(*args, **kwargs):  # no named `self`: diffrax passes `self=` to its filter_custom_vjp
        try:
            fun = user_function(args[0])
            if fun is not None:
                _note_function(fun, args[1:], kwargs, args[0], kind)
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

    # After JAX's own exit handlers are registered, so that this one runs before they close the backends.
    atexit.register(_at_exit)

    for cls in (cd.custom_vjp, cd.custom_jvp):
        original = cls.__call__
        if getattr(original, "_vjplint_records", False):
            continue

        def __call__(self, *args, __original=original, **kwargs):
            try:
                _note(self, args, kwargs)
            except Exception:  # recording must never change what the program does
                pass
            try:
                return __original(self, *args, **kwargs)
            except Exception as exc:
                _note_raised(self, exc)  # never raises; the program sees its own exception, unchanged
                raise
        __call__._vjplint_records = True
        __call__.__wrapped__ = original
        cls.__call__ = __call__


def _note(derivative, args, kwargs):
    from jax._src import custom_derivatives as cd

    fun = derivative.fun
    if getattr(fun, "__module__", "").split(".")[0] in WRAPPED_BY:
        return  # a library wrapper's internal custom_vjp: recorded at the wrapper's own call
    _note_function(fun, args, kwargs, derivative, "vjp" if isinstance(derivative, cd.custom_vjp) else "jvp", True)


# What JAX raises at a call of a custom derivative because of the definition or the call itself,
# not the values: a keyword argument it cannot resolve, forward mode on a custom_vjp, no rule
# registered, a rule's output of the wrong form (jax-facts; heldout4/5's `caller_kwonly_option`,
# whose usage test raises at the call, so nothing else is recorded).
RAISED_AT_CALL = re.compile(
    r"could not be resolved to positional-only arguments|can't apply forward-mode autodiff \(jvp\) to a "
    r"custom_vjp function|No [JV]+P defined for custom_[jv]+p function|Custom (?:VJP fwd|JVP) rule .{0,200}must "
    r"produce", re.S)


def _note_raised(derivative, exc):
    """An exception JAX raised at a call of `derivative` for the definition or the call itself
    (RAISED_AT_CALL): kept on its definition with the caller's file and line (the first frame out
    of installed packages), so that the check after the run reports it even when no call's
    arguments could be kept. The first per definition; never raises."""
    if _state["checked"]:
        return
    try:
        detail = " ".join("{}: {}".format(type(exc).__name__, exc).split())  # JAX's message spans lines
        if not RAISED_AT_CALL.search(detail):
            return
        from jax._src import custom_derivatives as cd

        fun = derivative.fun
        if getattr(fun, "__module__", "").split(".")[0] in WRAPPED_BY:
            return
        frame, where = sys._getframe(1), None
        while frame is not None:
            name = os.path.realpath(frame.f_code.co_filename or "")
            parts = name.split(os.sep)
            if not name.startswith("<") and "site-packages" not in parts and "dist-packages" not in parts and \
                    not name.startswith(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))):
                where = (name, frame.f_lineno)
                break
            frame = frame.f_back
        key = _definition(fun, True)
        with _lock:
            entry = _defs.get(key)
            if entry is None:
                if len(_defs) >= MAX_DEFINITIONS:
                    return
                qualname = getattr(fun, "__qualname__", None)
                entry = _defs[key] = {"fun": fun, "objects": [], "signatures": {},
                                      "kind": "vjp" if isinstance(derivative, cd.custom_vjp) else "jvp",
                                      "key": "{}.{}".format(getattr(fun, "__module__", "?"), qualname)
                                      if isinstance(qualname, str) else None}
            if len(entry["objects"]) < MAX_OBJECTS and not any(o is derivative for o in entry["objects"]):
                entry["objects"].append(derivative)
            entry.setdefault("raised", {"detail": detail[:600], "where": where})
    except Exception:
        pass


# The packages of WRAPPERS: their internal custom_vjp/custom_jvp objects are not the user's.
WRAPPED_BY = {"equinox", "flax"}


def _definition(fun, unwrap=False):
    """(file, first line, name) of the code that defines `fun`: one entry per definition, whatever
    made the object (a factory, a method, a closure, a class body, a loop)."""
    code, seen = getattr(fun, "__code__", None), 0
    while unwrap and code is None and hasattr(fun, "lower") and getattr(fun, "__wrapped__", None) is not None \
            and seen < 8:  # JAX's custom_vjp/custom_jvp over `@jax.jit` (what jit returns has `lower`)
        fun, seen = fun.__wrapped__, seen + 1
        code = getattr(fun, "__code__", None)
    while unwrap and code is not None and seen < 8 and code.co_flags & 0x0C == 0x0C and \
            getattr(getattr(fun, "__wrapped__", None), "__code__", None):
        # A pass-through decorator (`*args, **kwargs`, written with `functools.wraps`) under the creator
        # (recurrentgemma's type checker, a `named_scope`): the definition is the function it wraps,
        # where the static model has it. A wrapper with parameters of its own (logbesselk's
        # `wrapped_func(v, x)`, which the creator is applied to inside a factory) is the definition.
        fun, seen = fun.__wrapped__, seen + 1
        code = fun.__code__
    if code is None:
        return ("", 0, "{}.{}".format(getattr(fun, "__module__", "?"), getattr(fun, "__qualname__", repr(fun))))
    return (code.co_filename, code.co_firstlineno, code.co_name)


def _note_function(fun, args, kwargs, obj=None, kind="vjp", unwrap=False):
    if _state["checked"] and _state.get("only") is None:
        return  # the checks after the run call the derivatives too: not the project's calls (but `replay`)
    import jax
    import numpy as np

    if kwargs:
        import inspect

        bound = inspect.signature(fun).bind(*args, **kwargs)
        if bound.kwargs:  # as JAX resolves them: the defaults of the parameters between fill the gaps
            bound.apply_defaults()  # (`gmm(lhs, rhs, sizes, tiling=..., interpret=False)` skips `group_offset`)
            if bound.kwargs:
                return
        args = bound.args
    leaves, treedef = jax.tree_util.tree_flatten(args)
    examples = _unbatched(leaves, jax, np)
    if examples:  # under an eager `vmap`: the concrete calls behind the batch, each as a call of its own
        for example in examples:
            _note_function(fun, jax.tree_util.tree_unflatten(treedef, example), {}, obj, kind, unwrap)
        return
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
        elif type(leaf) in (float, int):
            parts.append(type(leaf).__name__)  # a Python number is a value, not part of the signature
        else:
            parts.append(repr(leaf)[:80] if isinstance(leaf, (bool, complex, str)) or leaf is None
                         else type(leaf).__qualname__)
        values.append(leaf)
    signature = "{}|{}".format(treedef, ",".join(parts))
    where = _definition(fun, unwrap)
    if _state.get("only") is not None and where != _state["only"]:
        return
    with _lock:
        entry = _defs.get(where)
        if entry is None:
            if len(_defs) >= MAX_DEFINITIONS:
                return
            name = getattr(fun, "__qualname__", None)
            entry = _defs[where] = {"fun": fun, "kind": kind, "objects": [], "signatures": {},
                                    "key": "{}.{}".format(getattr(fun, "__module__", "?"), name)
                                    if isinstance(name, str) else None}
        if obj is not None and len(entry["objects"]) < MAX_OBJECTS and not any(o is obj for o in entry["objects"]):
            entry["objects"].append(obj)  # kept alive: checked after the run, in this process
        callers = entry.setdefault("callers", {})
    if len(callers) < MAX_CALLERS:  # a traced call's callers too: those outside the `jit` hold concrete values
        _note_callers(callers, where[0], np, jax)
    with _lock:
        sigs = entry["signatures"]
        slot = sigs.get(signature)
        if slot is None:
            if len(sigs) >= MAX_SIGNATURES:
                return
            slot = sigs[signature] = {"kept": [], "count": 0, "digests": set()}
        slot["count"] += 1
        if abstract:
            if not slot["kept"] and not slot.get("shapes"):
                slot["shapes"] = jax.tree_util.tree_unflatten(treedef, values)  # a traced call: its shapes, until a concrete call of them comes
            return
        if _state["bytes"] > MAX_BYTES:
            return
    concrete = [np.array(v) if hasattr(v, "shape") and hasattr(v, "dtype") else v for v in values]
    digest, position, size = _summary(np, concrete)
    with _lock:
        if digest in slot["digests"]:
            return  # a value already kept: a sample, not copies
        slot["digests"].add(digest)
        slot["kept"].append((position, jax.tree_util.tree_unflatten(treedef, concrete)))
        _state["bytes"] += size
        if len(slot["kept"]) > MAX_KEPT:
            _thin(slot["kept"])


def replay(where, entry, module):
    """For a definition the run called only traced (under `jit`, whose tracers hold no values): its
    module's callers the run called, rerun in turn at the arguments the run passed them (their
    frames outside the `jit` held concrete values: _note_callers) with `jax.disable_jit()`, so that
    the derivative sees the values the project's `jit` traced it with. Only that definition's calls
    are noted; the first caller that gives concrete calls decides. (the caller's name, {signature:
    slot}) with the concrete slots, or None. Never raises; the program's own outcome is past."""
    callers = list((entry.get("callers") or {}).items())
    if not callers or module is None:
        return None
    try:
        import jax
    except Exception:
        return None
    saved = entry["signatures"]
    try:
        for name, args in callers:
            fn = getattr(module, name, None)
            if not callable(fn):
                continue
            entry["signatures"] = {}
            _state["only"] = where
            try:
                with jax.disable_jit():
                    fn(*args)
            except BaseException as exc:  # what the caller does past the call is not ours to judge
                if isinstance(exc, KeyboardInterrupt):
                    raise
            finally:
                _state["only"] = None
            fresh = {sig: slot for sig, slot in entry["signatures"].items() if slot["kept"]}
            if fresh:
                return name, fresh
    except Exception:
        return None
    finally:
        _state["only"] = None
        entry["signatures"] = saved
    return None


EXAMPLES_PER_BATCH = 8  # concrete calls taken from one eager `vmap` call, spread over the batch


def _unbatched(leaves, jax, np):
    """A call under an eager `jax.vmap` (no `jit` around it) sees batch tracers whose batched values are
    concrete: the calls it stands for, one per example (sliced along each mapped argument's batch
    axis; an unmapped argument as it is), at most EXAMPLES_PER_BATCH spread over the batch. None
    when no leaf is such a tracer, or one is traced otherwise (under `jit`, `scan`: shapes only)."""
    mapped, size = [], None
    for leaf in leaves:
        if not isinstance(leaf, jax.core.Tracer):
            mapped.append((leaf, None))
            continue
        if type(leaf).__name__ != "BatchTracer" or not hasattr(leaf, "val"):
            return None
        val = leaf.val
        if isinstance(val, jax.core.Tracer):
            val = val.to_concrete_value() if hasattr(val, "to_concrete_value") else None
            if val is None:
                return None
        dim = getattr(leaf, "batch_dim", None)
        if not isinstance(dim, int):
            mapped.append((val, None))
            continue
        n = int(np.shape(val)[dim])
        if size not in (None, n) or n == 0:
            return None
        size = n
        mapped.append((val, dim))
    if size is None:
        return None
    picks = sorted({round(k * (size - 1) / max(1, EXAMPLES_PER_BATCH - 1)) for k in range(EXAMPLES_PER_BATCH)})
    return [[np.asarray(np.take(np.asarray(v), i, axis=d)) if d is not None else v for v, d in mapped] for i in picks]


def _note_callers(callers, filename, np, jax):
    """The arguments the run passed the module's own functions that called the derivative (its
    callers, on the stack now: module-level functions of the file that defines it), the first
    concrete call of each, so that check-grads runs them as the project does (a caller's arguments
    are seldom the derivative's: `eval_fn(tokens, wi, wo)` calling `gmm(lhs, rhs, group_sizes)`).
    A caller that rebinds one of its parameters before the call is left out (its frame holds the
    new value); so is one whose arguments are traced, or an array over MAX_ELEMENTS. Never raises."""
    try:
        frame, depth = sys._getframe(2), 0
        while frame is not None and depth < 40:
            code, depth = frame.f_code, depth + 1
            if code.co_filename == filename and code.co_name not in callers and _module_level(frame) and \
                    not _rebinds_parameters(code):
                args = _frame_arguments(frame, code, np, jax)
                if args is not None:
                    with _lock:
                        callers.setdefault(code.co_name, args)
            frame = frame.f_back
    except Exception:
        pass


def _module_level(frame):
    """Whether the frame runs a module-level function of its module (by name, through decorators)."""
    fn, seen = frame.f_globals.get(frame.f_code.co_name), 0
    while fn is not None and seen < 8:
        if getattr(fn, "__code__", None) is frame.f_code:
            return True
        fn, seen = getattr(fn, "__wrapped__", None), seen + 1
    return False


_REBINDS = {}


def _rebinds_parameters(code):
    """Whether the function assigns to or deletes one of its positional parameters (by bytecode)."""
    if code not in _REBINDS:
        import dis

        params = set(code.co_varnames[:code.co_argcount + (1 if code.co_flags & 0x04 else 0)
                                      + code.co_kwonlyargcount])
        found = False
        for ins in dis.get_instructions(code):
            if ins.opname.startswith(("STORE_FAST", "DELETE_FAST")):
                names = ins.argval if isinstance(ins.argval, tuple) else (ins.argval,)
                if params & set(names):
                    found = True
                    break
        _REBINDS[code] = found
    return _REBINDS[code]


def _frame_arguments(frame, code, np, jax):
    """The positional arguments (and `*args`) the frame's function was called with, concrete:
    arrays copied to NumPy; None when one is traced or too large."""
    names = list(code.co_varnames[:code.co_argcount])
    values = [frame.f_locals[n] for n in names if n in frame.f_locals]
    if len(values) != len(names):
        return None
    if code.co_flags & 0x04:  # *args
        values += list(frame.f_locals.get(code.co_varnames[code.co_argcount + code.co_kwonlyargcount], ()))

    def one(leaf):
        if isinstance(leaf, jax.core.Tracer):
            leaf = leaf.to_concrete_value() if hasattr(leaf, "to_concrete_value") else None
            if leaf is None:
                raise ValueError("traced")
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype") and not isinstance(leaf, np.ndarray):
            if int(np.size(leaf)) > MAX_ELEMENTS:
                raise ValueError("large")
            return np.array(leaf)
        return leaf
    try:
        return tuple(jax.tree_util.tree_map(one, v) for v in values)
    except Exception:
        return None


def write():
    """This process's records, as one pickle file in the recording directory (by the module and
    qualified name of each function check-grads can reach by name)."""
    directory = _state["directory"]
    records = {}
    with _lock:
        if _state["written"]:
            return
        _state["written"] = True  # written once (pytest_unconfigure, then atexit)
        entries = list(_defs.values())
    for entry in entries:
        key = entry["key"]
        if not key or "<locals>" in key:
            continue  # reachable only in the process that made it: checked there (check_live)
        sigs = records.setdefault(key, {"signatures": {}})["signatures"]
        for sig, slot in entry["signatures"].items():
            calls = spread(slot["kept"], MAX_CALLS) or ([slot["shapes"]] if slot.get("shapes") is not None else [])
            pickled = []
            for call in calls:
                try:
                    pickled.append(pickle.dumps(call, protocol=4))
                except Exception:  # a lambda, a lock, ...: the shapes are still known
                    pass
            have = sigs.setdefault(sig, {"calls": [], "abstract": not slot["kept"], "count": 0})
            have["count"] += slot["count"]
            have["calls"].extend(pickled[:MAX_CALLS - len(have["calls"])])
    if not directory or not records:
        return
    try:
        os.makedirs(directory, exist_ok=True)
        name = os.path.join(directory, "{}-{}.pkl".format(os.getpid(), int(time.time() * 1000)))
        with open(name + ".tmp", "wb") as handle:
            pickle.dump({"format": FORMAT, "argv": sys.argv[:4], "records": records}, handle, protocol=4)
        os.replace(name + ".tmp", name)
    except OSError:
        pass


def clear(directory):
    """Remove earlier recordings (a new recording run replaces them)."""
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            if name.endswith((".pkl", ".tmp", ".json", ".jsonl")):
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
                if have["abstract"] and not slot["abstract"]:  # concrete values replace shapes
                    have["calls"], have["abstract"] = [], False
                elif slot["abstract"] and not have["abstract"]:
                    continue
                have["calls"].extend(slot["calls"][:MAX_CALLS - len(have["calls"])])
    return {key: sorted(((sig, s["count"], s["calls"], s["abstract"]) for sig, s in sigs.items()),
                        key=lambda item: (item[3],) + signature_order(item[0], item[2], item[1]))
            for key, sigs in merged.items()}

