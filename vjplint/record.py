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

After the run, each process checks the custom derivatives it called, in that process
(check_live). PYTEST_DONT_REWRITE: a `--record` run loads this module before pytest names it
as a plugin (PYTEST_PLUGINS), too late for pytest to rewrite its asserts (it has none).
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
MAX_SIGNATURES = 4  # per definition
MAX_KEPT = 12  # distinct concrete calls kept per signature, thinned to spread over their values
MAX_CALLS = 5  # of them, checked (and written): the extremes and some between
MAX_OBJECTS = 3  # live objects kept per definition (a factory's, a loop's)
MAX_DEFINITIONS = 2000
MAX_ELEMENTS = 100_000
MAX_BYTES = 256 * 2 ** 20  # values kept per process
FORMAT = 2

# (file, first line, name) -> {"fun", "kind", "key", "objects": [live objects], "signatures": {sig: slot}};
# a slot: {"kept": [(position, args)], "count", "digests", "shapes" (a traced call's, until a concrete one)}
_defs = {}
_lock = threading.Lock()
_state = {"directory": None, "installed": False, "written": False, "bytes": 0, "checked": False}


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


def _at_exit():
    write()
    try:
        check_live()
    except Exception:
        pass


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
            return __original(self, *args, **kwargs)
        __call__._vjplint_records = True
        __call__.__wrapped__ = original
        cls.__call__ = __call__


def _note(derivative, args, kwargs):
    from jax._src import custom_derivatives as cd

    fun = derivative.fun
    if getattr(fun, "__module__", "").split(".")[0] in WRAPPED_BY:
        return  # a library wrapper's internal custom_vjp: recorded at the wrapper's own call
    _note_function(fun, args, kwargs, derivative, "vjp" if isinstance(derivative, cd.custom_vjp) else "jvp")


# The packages of WRAPPERS: their internal custom_vjp/custom_jvp objects are not the user's.
WRAPPED_BY = {"equinox", "flax"}


def _definition(fun):
    """(file, first line, name) of the code that defines `fun`: one entry per definition, whatever
    made the object (a factory, a method, a closure, a class body, a loop)."""
    code = getattr(fun, "__code__", None)
    if code is None:
        return ("", 0, "{}.{}".format(getattr(fun, "__module__", "?"), getattr(fun, "__qualname__", repr(fun))))
    return (code.co_filename, code.co_firstlineno, code.co_name)


def _note_function(fun, args, kwargs, obj=None, kind="vjp"):
    if _state["checked"]:
        return  # the checks after the run call the derivatives too: not the project's calls
    import jax
    import numpy as np

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
        elif type(leaf) in (float, int):
            parts.append(type(leaf).__name__)  # a Python number is a value, not part of the signature
        else:
            parts.append(repr(leaf)[:80] if isinstance(leaf, (bool, complex, str)) or leaf is None
                         else type(leaf).__qualname__)
        values.append(leaf)
    signature = "{}|{}".format(treedef, ",".join(parts))
    where = _definition(fun)
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


def _summary(np, leaves):
    """(a digest of the values, where they lie: the mean of their finite floats, bytes held)."""
    import hashlib

    h, total, count, size, floats = hashlib.blake2b(digest_size=16), 0.0, 0, 0, 0
    for leaf in leaves:
        if isinstance(leaf, np.ndarray):
            h.update(str(leaf.dtype).encode() + str(leaf.shape).encode())
            h.update(np.ascontiguousarray(leaf).tobytes())
            size += leaf.nbytes
            if np.issubdtype(leaf.dtype, np.floating):  # an empty array has nothing finite either
                floats += 1
                finite = leaf[np.isfinite(leaf)]
                if finite.size:
                    total, count = total + float(finite.astype(np.float64).mean()), count + 1
        else:
            h.update(repr(leaf).encode()[:200])
            if type(leaf) in (float, int):
                floats += 1
                if abs(float(leaf)) != float("inf") and leaf == leaf:  # finite
                    total, count = total + float(leaf), count + 1
    # No finite float anywhere (`log1mexp(-inf)`, a bounds test): nothing to differentiate there.
    return h.hexdigest(), (total / count if count else None if floats else 0.0), size


def _thin(kept):
    """Drop the kept call whose loss spreads the rest least: never an extreme, else the one
    between the two closest neighbours (kept sorted by position)."""
    if any(item[0] is None for item in kept):  # values with nothing finite go first
        del kept[next(i for i, item in enumerate(kept) if item[0] is None)]
        return
    kept.sort(key=lambda item: item[0])
    worst = min(range(1, len(kept) - 1), key=lambda i: kept[i + 1][0] - kept[i - 1][0])
    del kept[worst]


def signature_order(signature, calls, count):
    """Sort key of a signature: concrete values first, then real floating-point arrays (a complex
    or integer signature cannot be differentiated as one), then more distinct calls, more calls."""
    real = "float" in signature.split("|", 1)[-1]
    return (not calls, not real, -len(calls), -count)


def spread(kept, n):
    """`n` of the kept calls, spread over where they lie: the extremes first, then between."""
    kept = sorted((item for item in kept if item[0] is not None), key=lambda item: item[0]) or \
        [item for item in kept][:1]  # calls with no finite value only when there is nothing else
    if len(kept) <= n:
        picks = list(range(len(kept)))
    else:
        picks = sorted({round(i * (len(kept) - 1) / (n - 1)) for i in range(n)}) if n > 1 else [0]
    order = ([picks[0], picks[-1]] if len(picks) > 1 else picks[:1]) + picks[1:-1]
    return [kept[i][1] for i in order]


class _Abstract:
    """An argument recorded as shape and dtype only (traced, or too large)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype

    def __repr__(self):
        return "{}{}".format(self.dtype, list(self.shape))

    def __reduce__(self):  # pickled as a tuple: loading needs no vjplint
        return (tuple, (("__vjplint_abstract__", self.shape, self.dtype),))


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
            if name.endswith((".pkl", ".tmp", ".json")):
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


# -- checking in this process, after the run -------------------------------------------------------------
PATHS_ENV = "VJPLINT_RECORD_PATHS"  # where the definitions to check live (os.pathsep-separated)
LOADED_AS = "_vjplint_record"  # this module's name in a process the sitecustomize set up (a pytest plugin there)
LIVE_FORMAT = 1


def wanted(filename, roots):
    """Whether the definition in `filename` is the project's: under one of `roots` when given,
    else not an installed package's (site-packages, JAX's own)."""
    if not filename or filename.startswith("<"):
        return False
    real = os.path.realpath(filename)
    if roots:
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)
    return not any(part in ("site-packages", "dist-packages") for part in real.split(os.sep))


def check_live():
    """Check every custom derivative this process called, with the objects it called and at the
    values it recorded, in this process (a fork is unsafe once JAX's threads run), and write the
    verdicts as JSON beside the recordings, by definition (file and first line of its code). The
    program's own outcome is untouched: nothing here raises."""
    with _lock:
        if _state["checked"] or not _state["directory"]:
            return
        _state["checked"] = True
        roots = [os.path.realpath(p) for p in os.environ.get(PATHS_ENV, "").split(os.pathsep) if p]
        entries = [(where, e) for where, e in _defs.items() if e["objects"] and wanted(where[0], roots)]
    if not entries:
        return
    try:
        import jax
        import numpy
    except Exception:
        return
    started = time.time()
    child = _load_child()
    device = jax.devices()[0]
    x64 = device.platform != "tpu"  # float64 where the device has it
    saved = (jax.config.jax_enable_x64, jax.config.jax_default_matmul_precision)
    verdicts = []
    try:
        if x64:
            jax.config.update("jax_enable_x64", True)
        else:
            jax.config.update("jax_default_matmul_precision", "highest")
        for k, ((filename, line, _name), entry) in enumerate(entries):
            _progress(k, len(entries), started)
            try:
                verdicts.append(_check_entry(child, jax, numpy, filename, line, entry, x64))
            except Exception as exc:  # one definition's trouble does not stop the others
                verdicts.append({"file": os.path.realpath(filename), "line": line, "row": line, "text": "",
                                 "qualname": getattr(entry["fun"], "__qualname__", "?"), "key": entry["key"],
                                 "kind": entry["kind"], "objects": len(entry["objects"]), "calls": 0, "seconds": 0,
                                 "result": {"status": "unverified", "reason": "the in-process check failed: {!r}"
                                            .format(exc)[:500], "checks": [], "inputs": []}})
        _progress(len(entries), len(entries), started)
    except BaseException as exc:  # Ctrl-C while checking: the run's own outcome stands
        sys.stderr.write("vjplint: warning: checking the recorded custom derivatives stopped: {!r}\n".format(exc))
    finally:
        jax.config.update("jax_enable_x64", saved[0])
        jax.config.update("jax_default_matmul_precision", saved[1])
    label = "cpu" if device.platform == "cpu" else str(device)
    _write_json({"format": LIVE_FORMAT, "device": label, "device_kind": getattr(device, "device_kind", ""),
                 "jax_version": jax.__version__, "seconds": time.time() - started, "verdicts": verdicts})


def _progress(done, total, started):
    """A progress line on the terminal once the checks have taken more than two seconds."""
    try:
        if not sys.stderr.isatty() or time.time() - started < 2:
            return
        sys.stderr.write("\r\033[Kvjplint: checked {}/{} custom derivatives this process called".format(done, total)
                         if done < total else "\r\033[K")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _load_child():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gradcheck", "child.py")
    spec = importlib.util.spec_from_file_location("_vjplint_gradcheck_child", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_entry(child, jax, numpy, filename, line, entry, x64):
    fun = entry["fun"]
    started = time.time()
    plan, row, digest = live_plan(fun, entry["kind"], filename, line, nondiff_of(entry["objects"][0]))
    plan.update(kind=entry["kind"], key=entry["key"] or plan["qualname"])
    signatures = sorted(entry["signatures"].items(), key=lambda item: (
        bool(item[1]["kept"]) and all(pos is None for pos, _ in item[1]["kept"]),  # nothing finite: last
        signature_order(item[0], item[1]["kept"], item[1]["count"])))
    signatures = [slot for _sig, slot in signatures]
    count = signatures[0]["count"] if signatures else 0
    calls = spread(signatures[0]["kept"], MAX_CALLS) if signatures and signatures[0]["kept"] else []
    if not calls and signatures and signatures[0].get("shapes") is not None:
        calls = [_markers(jax, signatures[0]["shapes"])]  # only traced calls: their shapes, made-up values
    module = sys.modules.get(getattr(fun, "__module__", None) or "")
    result = None
    if plan.get("unverifiable"):
        result = {"status": "unverified", "reason": plan["unverifiable"], "checks": [], "inputs": []}
    elif not calls:
        result = {"status": "unverified", "reason": "no call's arguments could be kept", "checks": [], "inputs": []}
    else:
        for obj in entry["objects"]:
            result = child.check_live(jax, numpy, obj, plan, [list(c) for c in calls], count, x64, module)
            if result.get("status") != "verified":
                break
    return {"file": os.path.realpath(filename), "line": line, "row": row, "qualname": plan["qualname"], "text": digest,
            "key": entry["key"], "kind": entry["kind"], "objects": len(entry["objects"]),
            "calls": sum(s["count"] for s in entry["signatures"].values()),
            "seconds": time.time() - started, "result": result}


def _markers(jax, tree):
    def one(x):
        return ("__vjplint_abstract__", x.shape, x.dtype) if isinstance(x, _Abstract) else x
    return jax.tree_util.tree_map(one, tree, is_leaf=lambda x: isinstance(x, _Abstract))


def nondiff_of(obj):
    value = getattr(obj, "nondiff_argnums", ())
    return tuple(value) if isinstance(value, (tuple, list)) else ()


def live_plan(fun, kind, filename, line, nondiff):
    """What the checker needs of the definition at `filename`:`line` (its code's first line): the
    plan of the static model (vjplint.verify.synth: roles, domains), matched by that line, and the
    row its findings land on; without a match, one from the live signature."""
    from vjplint.facts.collect import Recognizer, collect
    from vjplint.model.run_facts import NO_FACTS
    from vjplint.syntax.positions import node_range, source_lines
    from vjplint.syntax.source import decode, parse
    from vjplint.verify.synth import derivative_at, module_callers, plan_function, text_digest

    text = ""
    try:
        with open(filename, "rb") as handle:
            text = decode(handle.read()).text
        config = Workspace(Overrides(), None).settings_for(filename)
        lines = source_lines(text)
        model = collect(parse(text, filename), lines, Recognizer.for_run(config, NO_FACTS))
        d = derivative_at(model, line)
    except Exception:
        d = None
    if d is not None:
        plan = plan_function(model, d, (), None, from_callers=True, live=True).to_json()
        if d.class_node is None and d.enclosing is None:  # the module's functions that use it, as check-grads runs them
            plan["callers"] = module_callers(text, d.name)
        return plan, node_range(lines, d.anchor)[0].row, text_digest(text)
    import inspect

    qualname = getattr(fun, "__qualname__", getattr(fun, "__name__", "?"))
    plan = {"name": qualname.rsplit(".", 1)[-1], "qualname": qualname, "line": line, "moved": [], "params": [],
            "example": None, "unverifiable": None, "driver": None}
    try:
        parameters = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    for i, p in enumerate(parameters):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
            continue
        plan["params"].append({"kind": "unknown", "name": p.name, "position": i, "source": "recorded",
                               "role": "static" if i in nondiff else "diff"})
    return plan, line, text_digest(text)



def _write_json(data):
    import json

    directory = _state["directory"]
    try:
        os.makedirs(directory, exist_ok=True)
        name = os.path.join(directory, "live-{}-{}.json".format(os.getpid(), int(time.time() * 1000)))
        with open(name + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(data, handle, default=str)
        os.replace(name + ".tmp", name)
    except OSError:
        pass


def read_live(directory):
    """Every process's in-process verdicts: ({(real file, first line of the code): [verdict, ...]},
    the device line of the first)."""
    import json

    found, device = {}, None
    if not os.path.isdir(directory):
        return found, device
    for name in sorted(os.listdir(directory)):
        if not (name.startswith("live-") and name.endswith(".json")):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("format") != LIVE_FORMAT:
            continue
        device = device or {k: data.get(k, "") for k in ("device", "device_kind", "jax_version")}
        for verdict in data.get("verdicts", []):
            for k in ("device", "device_kind", "jax_version"):
                verdict.setdefault(k, data.get(k, ""))
            found.setdefault((verdict["file"], verdict["line"]), []).append(verdict)
    return found, device


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


def pytest_sessionfinish(session):
    """At the end of the session, before an xdist worker reports that it finished (its controller
    ends it soon after, without exit handlers): the recording, then the checks."""
    if not os.environ.get(PATHS_ENV):  # by default, the definitions under pytest's root directory
        os.environ[PATHS_ENV] = str(session.config.rootpath)
    _at_exit()


def pytest_unconfigure(config):
    _at_exit()


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
    import types
    sys.modules["_vjplint_record"] = types.ModuleType("_vjplint_record")  # PYTEST_PLUGINS names it
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
