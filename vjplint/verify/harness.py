"""The verification harness: run as a script in a fresh Python process, never imported by the
linting process. `python -I -B harness.py REQUEST.json RESULT.jsonl`.

It imports JAX, loads the original and the rewritten module from their source text (under the
module's real name, so relative imports work), and for each rewritten custom_vjp:

* makes inputs from the static descriptions (shapes probed with `jax.eval_shape`),
* runs the original eagerly with concrete values: the reference values and gradients,
* runs the rewrite eagerly and under jit, vmap, grad, jit(grad) and vmap(grad), the moved
  arguments traced (and batched under vmap), and compares (tolerances by dtype),
* runs the original under jit with the moved arguments traced: the hazard the fix removes.

A rewrite check that raises is re-run on the original with only the differentiable arguments
traced (the "control"): when the original fails that way too, the transformation cannot be
checked for this function, which makes it unverified rather than failed.

Results are appended to RESULT as JSON lines as they are known, so a time limit or a crash
loses only the function in progress. Only the standard library, NumPy and JAX are used here.
"""

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import itertools
import json
import os
import re
import sys
import tempfile
import threading
import time
import traceback
import types
import zlib

BATCH = 3
SHAPES = ((3,), (), (2, 3), (3, 3), (4,), (3, 4), (4, 3))
# Tried when no combination of SHAPES works (a segment matmul's `(segments, in, out)` weights).
MORE_SHAPES = ((2, 3, 3), (3, 3, 3), (2, 3, 4))
INTS = (2, 1, 0, 3)
MAX_PROBES = 48
TOLERANCES = {"float64": 1e-12, "complex128": 1e-12, "float32": 1e-6, "complex64": 1e-6,
              "float16": 1e-2, "bfloat16": 1e-2}
BUILTIN_NAMES = {"abs": abs, "min": min, "max": max, "sum": sum, "float": float, "int": int, "tuple": tuple,
                 "range": range, "len": len, "pow": pow}


class Unverifiable(Exception):
    """The function cannot be checked: the message says why."""


def describe_exc(exc):
    text = str(exc).strip().splitlines()
    first = re.sub(r" at 0x[0-9a-fA-F]+", "", text[0]) if text else ""  # addresses vary between runs
    if len(first) > 400:
        first = first[:397] + "..."
    return "{}: {}".format(type(exc).__name__, first) if first else type(exc).__name__


def single_process_accelerator():
    """Whether JAX here would open a TPU, which libtpu lets one process at a time hold (a second
    one fails: "Internal error when accessing libtpu multi-process lockfile"). Cheap: no JAX import."""
    platforms = [p.strip().lower() for p in os.environ.get("JAX_PLATFORMS", "").split(",") if p.strip()]
    if platforms and "tpu" not in platforms:
        return False
    try:
        return importlib.util.find_spec("libtpu") is not None
    except (ImportError, ValueError):
        return False


def exit_with_parent():
    """End this process once the vjplint process that started it is gone (killed, or interrupted
    while it waited): it runs in a session of its own, so no terminal signal reaches it, and on a
    TPU it would keep the chip from every later run."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, name="vjplint-parent-watch", daemon=True).start()


def hold_the_chip(emit):
    """Wait for the TPU (when JAX would open one) behind a file lock that every vjplint child takes,
    so concurrent runs (an editor beside pre-commit, --jobs) take turns instead of failing. The
    lock lasts as long as the returned handle, i.e. this process. The events tell the parent when
    the wait began and ended: the time limit does not count it."""
    if not single_process_accelerator():
        return None
    try:
        import fcntl
        handle = open(os.path.join(tempfile.gettempdir(), "vjplint-tpu.lock"), "a")
        emit(event="waiting-for-chip")
        fcntl.flock(handle, fcntl.LOCK_EX)
    except (ImportError, OSError):
        return None  # no lock to share (another OS, a read-only /tmp): JAX's own error stands
    emit(event="chip")
    return handle


class Emitter:
    def __init__(self, path):
        self.handle = open(path, "w", encoding="utf-8")

    def __call__(self, **event):
        self.handle.write(json.dumps(event, default=str) + "\n")
        self.handle.flush()


def load_module(name, path, text):
    """Execute `text` as module `name` (file `path`), as `import name` would."""
    module = types.ModuleType(name)
    module.__file__ = path
    module.__package__ = name.rpartition(".")[0]
    module.__spec__ = importlib.util.spec_from_loader(name, loader=None, origin=path)
    code = compile(text, path, "exec")
    previous = sys.modules.get(name)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    finally:
        if previous is not None:
            sys.modules[name] = previous
        else:
            sys.modules.pop(name, None)
    return module


def import_package_first(name):
    """Import `name` the normal way first, its packages' `__init__` included, as `import name`
    would: a package whose `__init__` re-exports from this module (`from .core.spread import
    fold_rescale`, as nufftax and flax do) must be initialised before the module's text runs
    under its dotted name, else the module's own `import nufftax...` runs that `__init__`, which
    finds the half-executed module in `sys.modules` ("cannot import name 'fold_rescale' from
    'nufftax.core.spread'"). A failure here is not one: the texts are executed below either way,
    and their errors are what is reported."""
    if "." not in name:
        return
    try:
        importlib.import_module(name)
    except BaseException:  # SystemExit and KeyboardInterrupt from user code included
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            sys.modules.pop(loaded, None)


def set_in_package(name, module):
    """`from pkg import rules` reads the attribute of the imported package before `sys.modules`:
    with the package imported first (import_package_first), a companion must be its attribute too
    (None: the attribute goes)."""
    parent, _, child = name.rpartition(".")
    package = sys.modules.get(parent) if parent else None
    if package is None:
        return
    if module is None:
        package.__dict__.pop(child, None)
    else:
        setattr(package, child, module)


def as_tuples(value):
    """JSON lists back to the tuples the source wrote (literals are never lists)."""
    return tuple(as_tuples(v) for v in value) if isinstance(value, list) else value


def rehome(value, source, target):
    """`value` with every instance of a class `source` defines rebuilt as the class of that name
    in `target`: the original and the rewrite load the same classes twice, and a pytree node of
    one module's NamedTuple or dataclass is another node type for the other module's rules."""
    cls = type(value)
    if cls in (tuple, list):
        return cls(rehome(v, source, target) for v in value)
    if cls is dict:
        return {k: rehome(v, source, target) for k, v in value.items()}
    name = getattr(cls, "__qualname__", "")
    if "." in name or getattr(source, name, None) is not cls:
        return value
    twin = getattr(target, name, None)
    if not isinstance(twin, type) or twin is cls:
        return value
    if isinstance(value, tuple) and hasattr(cls, "_fields"):  # a NamedTuple
        return twin(*(rehome(v, source, target) for v in value))
    if dataclasses.is_dataclass(value):
        return twin(**{f.name: rehome(getattr(value, f.name), source, target)
                       for f in dataclasses.fields(value) if f.init})
    return value


def rehoming(f, source, target):
    """`f` (of module `target`) taking arguments built from `source`'s classes."""
    @functools.wraps(f)
    def call(*args, **kwargs):
        return f(*(rehome(a, source, target) for a in args), **kwargs)
    return call


def resolve(module, qualname):
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def main(argv):
    request_path, result_path = argv[1], argv[2]
    exit_with_parent()
    emit = Emitter(result_path)
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    sys.stdout = sys.stderr  # the user's prints must not mix with anything we parse
    sys.path[:0] = request["sys_path"] + [p for p in request.get("python_path", []) if p not in request["sys_path"]]
    try:
        import jax
        import numpy
    except BaseException as exc:  # ImportError, or a broken installation
        emit(event="no-jax", detail=describe_exc(exc), python=sys.executable)
        return 0
    chip = hold_the_chip(emit)  # noqa: F841 (held until this process exits)
    device = jax.devices()[0]
    label = "cpu" if device.platform == "cpu" else str(device)
    emit(event="start", device=label, device_kind=getattr(device, "device_kind", ""), jax_version=jax.__version__,
         python=sys.version.split()[0])
    import_package_first(request["module_name"])
    modules = {}
    original_error = None
    # A fix other than the residual one may repair a module that cannot even import (VJP103's
    # bare `nondiff_argnums=1`): that is then the original's failure, and the rewrite is still run.
    rewrites_only = all(p.get("kind") in ("rewrite", "module") for p in request["functions"])
    for which, key in (("original", "original_text"), ("rewritten", "rewritten_text")):
        saved = {}
        try:
            # Modules rewritten together with this one (a cross-module fix: its fwd/bwd rules)
            # are imported in the same version while it executes.
            for other in request.get("companions", ()):
                saved[other["module_name"]] = sys.modules.get(other["module_name"])
                sys.modules[other["module_name"]] = load_module(other["module_name"], other["path"], other[key])
                set_in_package(other["module_name"], sys.modules[other["module_name"]])
            modules[which] = load_module(request["module_name"], request["path"], request[key])
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from user code included
            if which == "original" and rewrites_only:
                where = _user_frame(exc, request["path"])
                original_error = describe_exc(exc) + (" (at {})".format(where) if where else "")
                modules["original"] = None
                continue
            emit(event="import-error", which=which, detail=describe_exc(exc),
                 where=_user_frame(exc, request["path"]))
            return 0
        finally:
            for name, previous in saved.items():
                if previous is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = previous
                set_in_package(name, previous)
    emit(event="imported")
    for plan in request["functions"]:
        emit(event="begin", name=plan["qualname"])
        try:
            if plan.get("driver"):
                result = CaptureVerifier(jax, numpy, modules["original"], modules["rewritten"], plan).run()
            elif plan.get("kind") in ("rewrite", "module"):
                result = RewriteVerifier(jax, numpy, modules["original"], modules["rewritten"], plan,
                                         original_error).run()
            else:
                result = Verifier(jax, numpy, modules["original"], modules["rewritten"], plan).run()
        except Unverifiable as exc:
            result = {"status": "unverified", "reason": str(exc), "checks": [], "inputs": []}
        except BaseException as exc:
            result = {"status": "unverified", "reason": "the harness failed: " + describe_exc(exc),
                      "checks": [], "inputs": [], "traceback": traceback.format_exc(limit=6)}
        emit(event="function", name=plan["qualname"], **result)
    emit(event="done")
    return 0


def _user_frame(exc, path):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    return "line {}".format(frames[-1].lineno) if frames else ""


class Verifier:
    def __init__(self, jax, np, original, rewritten, plan):
        self.jax, self.np = jax, np
        self.jnp = importlib.import_module("jax.numpy")
        self.original_module = original
        self.plan = plan
        self.params = plan["params"]
        self.checks = []
        if plan.get("unverifiable"):
            raise Unverifiable(plan["unverifiable"])
        try:
            self.fo = resolve(original, plan["qualname"])
        except AttributeError:
            raise Unverifiable("`{}` is not an attribute of the imported module".format(plan["qualname"])) from None
        try:
            self.fr = resolve(rewritten, plan["qualname"])
        except AttributeError:
            raise Unverifiable("`{}` is missing from the rewritten module".format(plan["qualname"])) from None
        self.moved = set(plan["moved"])
        self.inputs = []

    # -- inputs ---------------------------------------------------------------------------------------
    def traced_positions(self, args0):
        """The positions a transformation traces (not static, traceable), and those of them that
        hold floating-point values (what a gradient is taken with respect to)."""
        roles = [p["role"] for p in self.params] if self.params else ["diff"] * len(args0)
        traced = [i for i in range(len(args0))
                  if roles[i] != "static" and i not in self.untraced and self.traceable(args0[i])]
        return traced, [i for i in traced if self.is_float(args0[i])]

    def run(self):
        samples = self.make_samples()
        args0 = samples[0]
        n = len(args0)
        traced, floats = self.traced_positions(args0)
        diff_traced = [i for i in traced if i not in self.moved]
        diff_float = [i for i in floats if i not in self.moved]
        moved_float = [i for i in floats if i in self.moved]
        moved_traced = [i for i in traced if i in self.moved]
        names = [self.param_name(i) for i in range(n)]
        if not moved_traced:
            raise Unverifiable("no moved argument holds an array or a number to trace ({})".format(
                ", ".join("`{}`".format(names[i]) for i in sorted(self.moved)) or "none moved"))
        # The reference: the original, eager, concrete values.
        try:
            ref_out = [self.fo(*args) for args in samples]
        except Exception as exc:
            raise Unverifiable("the original raises with the synthesised inputs ({}): {}".format(
                self.describe_inputs(), describe_exc(exc))) from None
        self.weights = self.make_weights(ref_out[0])
        has_grad = bool(self.weights) and bool(diff_float or moved_float)
        ref_grad = None
        if has_grad and diff_float:
            try:
                ref_grad = [self.grad_of(self.fo, args, diff_traced, diff_float)(*self.pick(args, diff_traced))
                            for args in samples]
            except Exception as exc:
                raise Unverifiable("the original's eager gradient raises with the synthesised inputs ({}): {}"
                                   .format(self.describe_inputs(), describe_exc(exc))) from None
        jax = self.jax
        vals0 = self.pick(args0, traced)
        stacked = [self.stack([args[i] for args in samples]) for i in traced]
        ref_out_batched = self.stack(ref_out)
        f_r = self.bind(self.fr, args0, traced)
        f_c = self.bind(self.fo, args0, diff_traced)  # control: moved arguments concrete
        vals_c = self.pick(args0, diff_traced)
        stacked_c = [self.stack([args[i] for args in samples]) for i in diff_traced]

        self.check("eager", lambda: self.fr(*args0), ref_out[0], None)
        self.check("jit", lambda: jax.jit(f_r)(*vals0), ref_out[0], lambda: jax.jit(f_c)(*vals_c))
        self.check("vmap", lambda: jax.vmap(f_r)(*stacked), ref_out_batched,
                   lambda: jax.vmap(f_c)(*stacked_c) if stacked_c else None, compare_control=False)
        if has_grad:
            g_r = self.grad_of(self.fr, args0, traced, diff_float + moved_float)
            g_c = self.grad_of(self.fo, args0, diff_traced, diff_float) if diff_float else None
            expect0 = self.expected_grads(ref_grad[0] if ref_grad else (), diff_float, moved_float, args0, False)
            expect_b = self.expected_grads(self.stack(ref_grad) if ref_grad else (), diff_float, moved_float,
                                           stacked, True, traced)
            labels = [names[i] for i in diff_float + moved_float]
            zeros0 = expect0[len(diff_float):]

            def padded(run):  # the control's gradients, with the rewrite's zeros for moved arguments
                return (lambda: tuple(run()) + tuple(zeros0)) if g_c else None
            self.check("grad", lambda: g_r(*vals0), expect0, padded(lambda: g_c(*vals_c)), labels=labels)
            self.check("jit(grad)", lambda: jax.jit(g_r)(*vals0), expect0, padded(lambda: jax.jit(g_c)(*vals_c)),
                       labels=labels)
            self.check("vmap(grad)", lambda: jax.vmap(g_r)(*stacked), expect_b,
                       (lambda: jax.vmap(g_c)(*stacked_c)) if g_c and stacked_c else None, compare_control=False,
                       labels=labels)
        else:
            why = "the output has no floating-point values" if not self.weights else \
                "no argument is a floating-point value"
            for name in ("grad", "jit(grad)", "vmap(grad)"):
                self.checks.append({"name": name, "status": "skipped", "detail": why, "max_error": None})
        hazard = self.hazard(self.bind(self.fo, args0, traced), vals0, [names[i] for i in moved_traced])
        return self.verdict(hazard)

    def make_samples(self):
        target = getattr(self.fo, "fun", self.fo)
        try:
            self.signature = inspect.signature(target)
        except (TypeError, ValueError):
            self.signature = None
        # A differentiable argument left to its default is not traced by the caller's jit either.
        self.untraced = {i for i, spec in enumerate(self.params)
                         if spec["kind"] == "default" and spec["role"] == "diff"}
        if self.plan.get("example"):
            return self.samples_from_factory(self.plan["example"])
        in_module = self.module_examples()
        if in_module is not None:
            return self.samples_from_args([list(in_module) for _ in range(BATCH)], "EXAMPLE_ARGS() in the module")
        for spec in self.params:
            if spec["kind"] == "unknown":
                raise Unverifiable("cannot synthesise inputs: {}. Name example inputs in [tool.vjplint.verify] "
                                   "examples = {{\"{}\" = \"module:make_args\"}}".format(
                                       spec["reason"], self.plan.get("key", self.plan["qualname"])))
        choices = self.probe()
        samples = [self.build(choices, s) for s in range(BATCH)]
        self.inputs = []
        for i, (spec, value) in enumerate(zip(self.params, samples[0])):
            source = spec.get("source", "")
            if i in choices or any(isinstance(k, tuple) and k[0] == i for k in choices):
                source += "; {} probed".format("value" if spec["kind"] in ("int", "bool") else "shape")
            self.inputs.append({"name": spec["name"], "role": spec["role"], "value": self.summary(value),
                                "source": source})
        return samples

    def module_examples(self):
        """The module's own `EXAMPLE_ARGS()`: {"function" or "Class.function": (args...)}."""
        hook = getattr(self.original_module, "EXAMPLE_ARGS", None)
        if not callable(hook):
            return None
        try:
            table = hook()
        except Exception as exc:
            raise Unverifiable("the module's EXAMPLE_ARGS() raised {}".format(describe_exc(exc))) from None
        if not isinstance(table, dict) or self.plan["qualname"] not in table:
            return None
        args = table[self.plan["qualname"]]
        if not isinstance(args, (tuple, list)):
            raise Unverifiable("EXAMPLE_ARGS()[{!r}] must be a tuple of positional arguments, not {}".format(
                self.plan["qualname"], type(args).__name__))
        return args

    def samples_from_factory(self, ref):
        """`[tool.vjplint.verify] examples`: "module:callable", called with a seed if it takes one."""
        module_name, _, attr = ref.partition(":")
        try:
            factory = resolve(importlib.import_module(module_name), attr)
        except BaseException as exc:
            raise Unverifiable("cannot load the example inputs `{}`: {}".format(ref, describe_exc(exc))) from None
        try:
            takes_seed = bool(inspect.signature(factory).parameters)
        except (TypeError, ValueError):
            takes_seed = False
        samples = []
        for s in range(BATCH):
            try:
                args = factory(s) if takes_seed else factory()
            except BaseException as exc:
                raise Unverifiable("the example factory `{}` raised {}".format(ref, describe_exc(exc))) from None
            if not isinstance(args, (tuple, list)):
                raise Unverifiable("the example factory `{}` must return a tuple of positional arguments, "
                                   "not {}".format(ref, type(args).__name__))
            samples.append(list(args))
        return self.samples_from_args(samples, "example " + ref)

    def samples_from_args(self, samples, source):
        """Given argument lists; missing trailing ones take their defaults (and stay untraced)."""
        given = len(samples[0])
        if given > len(self.params):
            raise Unverifiable("{} gives {} arguments; `{}` takes {}".format(
                source, given, self.plan["qualname"], len(self.params)))
        self.untraced = set()
        for i in range(given, len(self.params)):
            parameter = self.signature.parameters.get(self.params[i]["name"]) if self.signature else None
            if parameter is None or parameter.default is inspect.Parameter.empty:
                raise Unverifiable("{} gives {} arguments and `{}` has no default".format(
                    source, given, self.params[i]["name"]))
            for args in samples:
                args.append(parameter.default)
            if self.params[i]["role"] == "diff":
                self.untraced.add(i)
        self.inputs = []
        for i, spec in enumerate(self.params):
            if spec["role"] == "static" or i in self.untraced or not self.traceable(samples[0][i]):
                for args in samples[1:]:  # values that are not traced must not vary across the batch
                    args[i] = samples[0][i]
            self.inputs.append({"name": spec["name"], "role": spec["role"], "value": self.summary(samples[0][i]),
                                "source": "default" if i in self.untraced else source})
        return samples

    def probe(self):
        """A shape (or int) for every slot that needs one, checked with jax.eval_shape. A slot is
        a parameter (its index) or a field of a synthesised object (index, field index)."""
        slots = []
        for i, spec in enumerate(self.params):
            if self.needs_choice(spec):
                slots.append((i, spec))
            for j, field in enumerate(spec.get("fields", ()) if spec["kind"] == "instance" else ()):
                if self.needs_choice(field):
                    slots.append(((i, j), field))
        if not slots:
            return {}
        tried, last_error = 0, None
        seen = set()
        for shapes in (SHAPES, SHAPES + MORE_SHAPES):  # each round has MAX_PROBES tries
            options = [shapes if spec["kind"] == "array" else INTS if spec["kind"] == "int" else (True, False)
                       for _, spec in slots]
            uniform = [tuple(o[k % len(o)] for o in options) for k in range(len(shapes))]
            budget = tried + MAX_PROBES
            for combo in itertools.chain(uniform, itertools.product(*options)):
                if combo in seen:
                    continue
                seen.add(combo)
                if tried >= budget:
                    break
                tried += 1
                choices = dict(zip([slot for slot, _ in slots], combo))
                try:
                    self.trace_original(self.build(choices, 0))
                    return choices
                except Unverifiable:
                    raise
                except Exception as exc:
                    last_error = exc
            if not any(spec["kind"] == "array" for _, spec in slots):
                break
        names = ", ".join("`{}`".format(spec["name"]) for _, spec in slots)
        raise Unverifiable("no probed shape for {} works with the original ({} tried; last error: {}). Name "
                           "example inputs in [tool.vjplint.verify] examples = {{\"{}\" = \"module:make_args\"}}"
                           .format(names, tried, describe_exc(last_error) if last_error else "none",
                                   self.plan.get("key", self.plan["qualname"])))

    @staticmethod
    def needs_choice(spec):
        return (spec["kind"] == "array" and spec.get("shape") is None) or spec["kind"] in ("int", "bool")

    def trace_original(self, args):
        """Raise unless the original traces (value and gradient) with these argument shapes."""
        jax = self.jax
        diff = [i for i, p in enumerate(self.params)
                if p["role"] == "diff" and i not in self.untraced and self.traceable(args[i])]
        floats = [i for i in diff if self.is_float(args[i])]
        f = self.bind(self.fo, args, diff)
        vals = self.pick(args, diff)
        try:
            out = jax.eval_shape(f, *vals)
        except jax.errors.ConcretizationTypeError:  # Python control flow on values: run it instead
            out = f(*vals)
        weights = self.make_weights(out)
        if floats and weights:
            saved, self.weights = getattr(self, "weights", None), weights
            try:
                g = self.grad_of(self.fo, args, diff, floats)
                try:
                    jax.eval_shape(g, *vals)
                except jax.errors.ConcretizationTypeError:
                    g(*vals)
            finally:
                self.weights = saved

    def build(self, choices, sample):
        args = []
        for i, spec in enumerate(self.params):
            shared = spec["role"] == "static" or spec["kind"] in ("literal", "expr", "default", "callable", "int",
                                                                   "bool")
            args.append(self.make_value(spec, choices, 0 if shared else sample, i))
        return args

    def make_value(self, spec, choices, sample, slot):
        np = self.np
        kind = spec["kind"]
        choice = choices.get(slot)
        where = list(slot) if isinstance(slot, tuple) else [slot]
        seed = [zlib.crc32(self.plan["qualname"].encode()), sample] + where
        rng = np.random.default_rng(seed)
        if kind == "array":
            shape = tuple(spec["shape"]) if spec.get("shape") is not None else tuple(choice)
            value = self.random_array(rng, shape, spec["dtype"])
        elif kind == "key":
            value = self.jax.random.PRNGKey(sample)
        elif kind == "float":
            value = float(rng.uniform(0.25, 1.75))
        elif kind in ("int", "bool"):
            value = choice
        elif kind == "literal":
            value = as_tuples(spec["value"])
        elif kind == "expr":
            namespace = dict(self.original_module.__dict__)
            namespace.setdefault("__builtins__", BUILTIN_NAMES)
            try:
                value = eval(spec["expr"], namespace)
            except Exception as exc:
                raise Unverifiable("evaluating `{}` (the value of `{}` at a {}) raised {}".format(
                    spec["expr"], spec["name"], spec["source"], describe_exc(exc))) from None
        elif kind == "default":
            parameter = self.signature.parameters.get(spec["name"]) if self.signature else None
            if parameter is None or parameter.default is inspect.Parameter.empty:
                raise Unverifiable("the default of `{}` cannot be read".format(spec["name"]))
            value = parameter.default
        elif kind == "callable":
            value = self.make_callable(spec.get("arity"))
        elif kind == "instance":
            cls = getattr(self.original_module, spec["class"], None)
            if cls is None:
                raise Unverifiable("the class `{}` is not in the imported module".format(spec["class"]))
            fields = {field["name"]: self.make_value(field, choices, sample, (slot, j))
                      for j, field in enumerate(spec["fields"])}
            value = cls(**fields)
        else:
            raise Unverifiable("cannot synthesise `{}`: {}".format(spec["name"], spec.get("reason", kind)))
        return value

    def random_array(self, rng, shape, dtype):
        jnp = self.jnp
        if dtype == "bool":
            return jnp.asarray(rng.random(shape) < 0.5)
        if dtype.startswith(("int", "uint")):
            return jnp.asarray(rng.integers(0, 3, shape), dtype=dtype)
        if dtype.startswith("complex"):
            return jnp.asarray(rng.uniform(0.25, 1.75, shape) + 1j * rng.uniform(0.25, 1.75, shape), dtype=dtype)
        return jnp.asarray(rng.uniform(0.25, 1.75, shape), dtype=dtype)

    def make_callable(self, arity):
        jnp = self.jnp
        if arity in (None, 1):
            return jnp.sin

        def combined(*args):
            total = jnp.sin(args[0])
            for a in args[1:]:
                total = total + jnp.sin(a)
            return total
        return combined

    # -- transformations ------------------------------------------------------------------------------
    def bind(self, f, args, positions):
        """f as a function of the values at `positions`; every other argument is closed over."""
        positions = list(positions)

        def bound(*values):
            full = list(args)
            for i, v in zip(positions, values):
                full[i] = v
            return f(*full)
        return bound

    def grad_of(self, f, args, positions, wrt):
        argnums = tuple(positions.index(i) for i in wrt)
        g = self.bind(f, args, positions)
        loss = self.loss
        return self.jax.grad(lambda *v: loss(g(*v)), argnums=argnums)

    def make_weights(self, out):
        np = self.np
        leaves = self.jax.tree_util.tree_leaves(out)
        rng = np.random.default_rng(7)
        weights = []
        for leaf in leaves:
            dtype = getattr(leaf, "dtype", None)
            if dtype is None or not self.jnp.issubdtype(dtype, self.jnp.inexact):
                weights.append(None)
                continue
            weights.append(self.jnp.asarray(rng.uniform(0.5, 1.5, np.shape(leaf)), dtype=dtype))
        return weights if any(w is not None for w in weights) else []

    def loss(self, out):
        """A fixed random linear functional of the output: its gradient is a VJP."""
        jnp = self.jnp
        leaves = self.jax.tree_util.tree_leaves(out)
        if len(leaves) != len(self.weights):
            raise ValueError("the output has {} leaves, the original's has {}".format(len(leaves), len(self.weights)))
        total = 0.0
        for leaf, w in zip(leaves, self.weights):
            if w is not None:
                total = total + jnp.real(jnp.sum(leaf * w))
        return total

    def expected_grads(self, ref, diff_float, moved_float, args, batched, traced=None):
        """The original's gradients at the differentiable positions, zeros at the moved ones."""
        jnp = self.jnp
        out = list(ref)
        for i in moved_float:
            value = args[traced.index(i)] if batched else args[i]
            out.append(self.jax.tree_util.tree_map(lambda leaf: jnp.zeros_like(jnp.asarray(leaf)), value))
        return tuple(out)

    def hazard(self, f_o, vals, moved_names):
        names = ", ".join("`{}`".format(n) for n in moved_names)
        try:
            self.jax.block_until_ready(self.jax.jit(f_o)(*vals))
        except self.jax.errors.UnexpectedTracerError as exc:
            return {"status": "confirmed", "detail": "the original raises UnexpectedTracerError under jit with {} "
                    "traced".format(names), "exception": describe_exc(exc)}
        except Exception as exc:
            return {"status": "other-error", "detail": "the original fails under jit with {} traced, but not with "
                    "the nondiff tracer error: {}".format(names, describe_exc(exc))}
        return {"status": "not-reproduced", "detail": "the original runs under jit with {} traced".format(names)}

    # -- checks and comparison ------------------------------------------------------------------------
    def check(self, name, run, expected, control, compare_control=True, labels=None):
        record = {"name": name, "status": "passed", "detail": "", "max_error": None}
        self.checks.append(record)
        try:
            actual = self.jax.block_until_ready(run())
        except Exception as exc:
            record.update(status="failed", detail=describe_exc(exc))
            if control is not None:
                try:
                    self.jax.block_until_ready(control())
                except Exception as control_exc:
                    record.update(status="unverifiable", detail="the original fails under {} too, with only its "
                                  "differentiable arguments traced: {}".format(name, describe_exc(control_exc)))
            return
        ok, err, detail = self.compare(actual, expected, labels)
        record["max_error"] = err
        if ok:
            return
        if control is not None and compare_control:  # does the transformation itself move the numbers?
            try:
                reference = self.jax.block_until_ready(control())
                same, err_c, _ = self.compare(actual, reference, labels)
                moved, _, _ = self.compare(reference, expected, labels)
                if same and not moved:
                    record.update(detail="matches the original under {} (max error {:.3g}); {} itself changes "
                                  "the original's values by up to {}".format(name, err_c, name, detail))
                    return
            except Exception:
                pass
        record.update(status="failed", detail=detail)

    def compare(self, actual, expected, labels=None):
        """(ok, max abs error, detail): same tree, shapes and dtypes; values within tolerance.
        `labels` name the entries of a gradient tuple (the parameters)."""
        np, jax = self.np, self.jax
        ta, te = jax.tree_util.tree_structure(actual), jax.tree_util.tree_structure(expected)
        if ta != te:
            return False, None, "the result's structure {} differs from the expected {}".format(ta, te)
        worst, detail, ok = 0.0, "", True
        paths = jax.tree_util.tree_flatten_with_path(expected)[0]
        for (path, e), a in zip(paths, jax.tree_util.tree_leaves(actual)):
            where = self.where(path, labels)
            a, e = np.asarray(a), np.asarray(e)
            if a.shape != e.shape:
                return False, None, "{} has shape {}, expected {}".format(where, a.shape, e.shape)
            if a.dtype != e.dtype:
                return False, None, "{} has dtype {}, expected {}".format(where, a.dtype, e.dtype)
            tol = TOLERANCES.get(str(e.dtype), 0.0)
            if e.dtype.kind in "fc" or str(e.dtype) == "bfloat16":
                a64, e64 = a.astype(np.complex128), e.astype(np.complex128)
                both_nan = np.isnan(a64) & np.isnan(e64)
                diff = np.where(both_nan, 0.0, np.abs(a64 - e64))
                diff = np.where(np.isnan(diff), np.inf, diff)
                bad = diff > tol + tol * np.abs(np.where(both_nan, 0.0, e64))
            else:
                diff = (a != e).astype(np.float64)
                bad = diff > 0
            err = float(diff.max()) if diff.size else 0.0
            worst = max(worst, err)
            if bad.any() and ok:
                ok = False
                index = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape)) if diff.ndim else ()
                detail = "{}{} is {}, expected {} (max error {:.3g}, tolerance {:g})".format(
                    where, list(index) if index else "", self.number(a[index]), self.number(e[index]), err, tol)
        return ok, worst, detail

    def where(self, path, labels):
        keystr = self.jax.tree_util.keystr
        if labels is not None and path and hasattr(path[0], "idx") and path[0].idx < len(labels):
            return "the gradient for `{}`{}".format(labels[path[0].idx], keystr(tuple(path[1:])))
        return "the output{}".format(keystr(tuple(path)))

    @staticmethod
    def number(value):
        try:
            return "{:.6g}".format(complex(value).real if complex(value).imag == 0 else complex(value))
        except (TypeError, ValueError):
            return repr(value)

    def verdict(self, hazard):
        failed = [c for c in self.checks if c["status"] == "failed"]
        unverifiable = [c for c in self.checks if c["status"] == "unverifiable"]
        if failed:
            status, reason = "failed", self.summarise(failed)
        elif unverifiable:
            status, reason = "unverified", self.summarise(unverifiable)
        else:
            status, reason = "verified", ""
        return {"status": status, "reason": reason, "checks": self.checks, "hazard": hazard, "inputs": self.inputs}

    @staticmethod
    def summarise(checks):
        first = checks[0]
        others = [c["name"] for c in checks[1:]]
        return "{}: {}{}".format(first["name"], first["detail"],
                                 " (also under {})".format(", ".join(others)) if others else "")

    # -- small helpers --------------------------------------------------------------------------------
    def traceable(self, value):
        leaves = self.jax.tree_util.tree_leaves(value)
        return bool(leaves) and all(
            isinstance(leaf, (bool, int, float, complex, self.np.ndarray, self.np.generic, self.jax.Array))
            for leaf in leaves)

    def is_float(self, value):
        leaves = self.jax.tree_util.tree_leaves(value)
        for leaf in leaves:
            if isinstance(leaf, (bool, int)):
                return False
            if isinstance(leaf, (float, complex)):
                continue
            dtype = getattr(leaf, "dtype", None)
            if dtype is None or not self.jnp.issubdtype(dtype, self.jnp.inexact):
                return False
        return bool(leaves)

    def pick(self, args, positions):
        return [args[i] for i in positions]

    def stack(self, items):
        jnp = self.jnp
        return self.jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *items)

    def param_name(self, i):
        return self.params[i]["name"] if i < len(self.params) else "#{}".format(i)

    def summary(self, value, depth=0):
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            return "{}{}".format(value.dtype, list(value.shape))
        if isinstance(value, (bool, int, float, str)) or value is None:
            return repr(value)
        if callable(value):
            return "callable {}".format(getattr(value, "__name__", type(value).__name__))
        if isinstance(value, (tuple, list)) and depth < 2:
            inner = ", ".join(self.summary(v, depth + 1) for v in value)
            return "({},)".format(inner) if isinstance(value, tuple) and len(value) == 1 else \
                ("({})" if isinstance(value, tuple) else "[{}]").format(inner)
        fields = getattr(value, "__dict__", None)
        if isinstance(fields, dict) and depth < 2:
            return "{}({})".format(type(value).__name__, ", ".join(
                "{}={}".format(k, self.summary(v, depth + 1)) for k, v in fields.items()))
        return "{} with {} leaves".format(type(value).__name__, len(self.jax.tree_util.tree_leaves(value)))

    def describe_inputs(self):
        return ", ".join("{}={}".format(i["name"], i["value"]) for i in self.inputs)


class CaptureVerifier(Verifier):
    """A custom_vjp defined inside the module-level function that calls it (the plan's `driver`):
    that function runs eagerly with synthesised inputs in each module, the custom_vjp it calls
    (its primal's `__qualname__` is the driver's `target`) and the arguments it passes are
    captured, and those are verified as a module-level custom_vjp's would be."""

    def __init__(self, jax, np, original, rewritten, plan):
        self.jax, self.np = jax, np
        self.jnp = importlib.import_module("jax.numpy")
        self.original_module, self.rewritten_module = original, rewritten
        self.plan, self.checks, self.inputs = plan, [], []
        self.driver = plan["driver"]
        self.target_params = plan["params"]
        self.params = self.driver["params"]
        self.moved = set(plan["moved"])
        if not self.driver.get("target"):
            raise Unverifiable("`{}` is not a def: its `__qualname__` cannot be matched".format(plan["name"]))
        try:
            self.driver_o = resolve(original, self.driver["qualname"])
            self.driver_r = resolve(rewritten, self.driver["qualname"])
        except AttributeError:
            raise Unverifiable("`{}` is not an attribute of both modules".format(self.driver["qualname"])) from None
        self.fo = self.driver_o

    def capture(self, driver, args):
        """Run `driver(*args)` eagerly; the first call of the target custom_vjp: (instance, args)."""
        cls, target, found = self.jax.custom_vjp, self.driver["target"], []
        call = cls.__call__

        def spy(instance, *a, **k):
            if not found and getattr(getattr(instance, "fun", None), "__qualname__", None) == target:
                found.append((instance, a, k))
            return call(instance, *a, **k)
        cls.__call__ = spy
        try:
            driver(*args)
        finally:
            cls.__call__ = call
        if not found:
            raise LookupError("`{}` did not call `{}`".format(self.driver["qualname"], self.plan["name"]))
        instance, a, k = found[0]
        if k:
            raise Unverifiable("`{}` passes keyword arguments to `{}`".format(self.driver["qualname"],
                                                                               self.plan["name"]))
        if any(isinstance(leaf, self.jax.core.Tracer) for leaf in self.jax.tree_util.tree_leaves(a)):
            raise Unverifiable("`{}` traces the arguments it passes to `{}` (a transformation inside it)".format(
                self.driver["qualname"], self.plan["name"]))
        return instance, list(a)

    def trace_original(self, args):  # a probe: the driver runs and reaches the custom_vjp
        self.capture(self.driver_o, args)

    def make_samples(self):
        try:
            self.signature = inspect.signature(self.driver_o)
        except (TypeError, ValueError):
            self.signature = None
        self.untraced = set()
        for spec in self.params:
            if spec["kind"] == "unknown":
                raise Unverifiable("cannot synthesise inputs for `{}`, which defines and calls `{}`: {}".format(
                    self.driver["qualname"], self.plan["name"], spec["reason"]))
        choices = self.probe()
        samples = []
        for s in range(BATCH):
            args = self.build(choices, s)
            try:
                instance, passed = self.capture(self.driver_o, args)
            except Unverifiable:
                raise
            except Exception as exc:
                raise Unverifiable("`{}` raises with the synthesised inputs: {}".format(
                    self.driver["qualname"], describe_exc(exc))) from None
            if s == 0:
                self.fo = instance
                try:
                    rewritten, _ = self.capture(self.driver_r, rehome(args, self.original_module,
                                                                      self.rewritten_module))
                    self.fr = rehoming(rewritten, self.original_module, self.rewritten_module)
                except Unverifiable:
                    raise
                except Exception as exc:  # the rewrite's caller fails: every check on it fails
                    error = exc

                    def fails(*_):
                        raise error
                    self.fr = fails
            samples.append(passed)
        self.params = self.target_params
        self.inputs = [{"name": spec["name"], "role": spec["role"], "value": self.summary(value),
                        "source": spec.get("source", "")} for spec, value in zip(self.params, samples[0])]
        return samples


REWRITE_VALUES = ("eager", "jit", "vmap")
REWRITE_GRADS = ("grad", "jit(grad)", "vmap(grad)", "grad(jit)", "grad(checkpoint in scan)")


class RewriteVerifier(Verifier):
    """A fix other than residual-plus-None (vjplint.verify.kinds): the rewrite must run under every
    transformation and equal the original wherever the original runs (unless the rule says the
    original is silently wrong there); where the original raises, the rewrite must agree with
    itself (its eager values and gradients). The hazard is what the original does instead."""

    def __init__(self, jax, np, original, rewritten, plan, original_error):
        self.jax, self.np = jax, np
        self.jnp = importlib.import_module("jax.numpy")
        self.plan, self.params, self.checks = plan, plan["params"], []
        self.kind, self.expect = plan.get("kind"), plan.get("expect", "raises")
        self.original_error = original_error
        self.original_module = original if original is not None else rewritten
        self.moved, self.inputs = set(), []
        self.raised, self.differed = [], []  # the original's failures: (transformation, detail)
        self.fr = self.fo = self.orig = None
        if self.kind == "module":
            return
        try:
            self.fr = resolve(rewritten, plan["qualname"])
        except AttributeError:
            raise Unverifiable("`{}` is missing from the rewritten module".format(plan["qualname"])) from None
        if original is not None:  # inputs are built from the original's classes
            self.fr = rehoming(self.fr, original, rewritten)
        # Inputs are synthesised and probed with the rewrite (the original may raise everywhere).
        self.fo = self.fr
        if original is not None:
            try:
                self.orig = resolve(original, plan["qualname"])
            except AttributeError:
                self.original_error = "`{}` is not an attribute of the original module".format(plan["qualname"])

    def probe(self):
        """Shapes with which the rewrite's value and gradient trace; failing that, its value alone
        (a rewrite whose gradient raises must fail its checks, not lose its inputs)."""
        self.value_only = False
        try:
            return Verifier.probe(self)
        except Unverifiable:
            self.value_only = True
            return Verifier.probe(self)

    def trace_original(self, args):
        if not self.value_only:
            return Verifier.trace_original(self, args)
        jax = self.jax
        diff = [i for i, p in enumerate(self.params)
                if p["role"] == "diff" and i not in self.untraced and self.traceable(args[i])]
        f = self.bind(self.fr, args, diff)
        try:
            jax.eval_shape(f, *self.pick(args, diff))
        except jax.errors.ConcretizationTypeError:  # Python control flow on values: run it instead
            f(*self.pick(args, diff))

    def run(self):
        if self.kind == "module":
            self.checks.append({"name": "import", "status": "passed", "detail": "the rewritten module imports",
                                "max_error": None})
            return self.verdict(self.rewrite_hazard())
        samples = self.make_samples()
        args0 = samples[0]
        n = len(args0)
        traced, floats = self.traced_positions(args0)
        names = [self.param_name(i) for i in range(n)]
        labels = [names[i] for i in floats]
        jax = self.jax
        try:
            mine = [jax.block_until_ready(self.fr(*args)) for args in samples]
        except Exception as exc:
            self.checks.append({"name": "eager", "status": "failed", "detail": describe_exc(exc), "max_error": None})
            return self.verdict(self.rewrite_hazard())
        self.weights = self.make_weights(mine[0])
        has_grad = bool(self.weights) and bool(floats)
        mine_grad = None
        if has_grad:
            try:
                mine_grad = [self.grad_of(self.fr, args, traced, floats)(*self.pick(args, traced)) for args in samples]
            except Exception as exc:
                self.checks.append({"name": "grad", "status": "failed", "detail": describe_exc(exc),
                                    "max_error": None})
                return self.verdict(self.rewrite_hazard())
        vals0 = self.pick(args0, traced)
        stacked = [self.stack([args[i] for args in samples]) for i in traced]

        def values(f, name):
            bound = self.bind(f, args0, traced)
            return {"eager": lambda: f(*args0), "jit": lambda: jax.jit(bound)(*vals0),
                    "vmap": lambda: jax.vmap(bound)(*stacked)}[name]

        def grads(f, name):
            g = self.grad_of(f, args0, traced, floats)
            bound, loss = self.bind(f, args0, traced), self.loss
            argnums = tuple(traced.index(i) for i in floats)

            def scanned(*v):
                body = jax.checkpoint(lambda c, _: (c + loss(bound(*v)), None))
                return jax.lax.scan(body, 0.0, None, length=1)[0]
            return {"grad": lambda: g(*vals0), "jit(grad)": lambda: jax.jit(g)(*vals0),
                    "vmap(grad)": lambda: jax.vmap(g)(*stacked),
                    "grad(jit)": lambda: jax.grad(lambda *v: loss(jax.jit(bound)(*v)), argnums=argnums)(*vals0),
                    "grad(checkpoint in scan)": lambda: jax.grad(scanned, argnums=argnums)(*vals0)}[name]

        for name in REWRITE_VALUES:
            if name != "eager" and not traced:
                self.checks.append({"name": name, "status": "skipped", "detail": "no argument to trace",
                                    "max_error": None})
                continue
            own = self.stack(mine) if name == "vmap" else mine[0]
            self.compare_both(name, values(self.fr, name), None if self.orig is None else values(self.orig, name), own, None)
        for name in REWRITE_GRADS:
            if not has_grad:
                why = "no argument is a floating-point value" if self.weights else \
                    "the output has no floating-point values"
                self.checks.append({"name": name, "status": "skipped", "detail": why, "max_error": None})
                continue
            own = self.stack(mine_grad) if name == "vmap(grad)" else mine_grad[0]
            self.compare_both(name, grads(self.fr, name), None if self.orig is None else grads(self.orig, name), own, labels)
        return self.verdict(self.rewrite_hazard())

    def compare_both(self, name, run, run_original, own, labels):
        """Run the rewrite and the original under `name`; the rewrite must equal the original
        where it runs (or differ only where the rule says the original is wrong), else its own
        eager values."""
        record = {"name": name, "status": "passed", "detail": "", "max_error": None}
        self.checks.append(record)
        jax = self.jax
        theirs, their_error = None, None
        if run_original is not None:
            try:
                theirs = jax.block_until_ready(run_original())
            except Exception as exc:
                their_error = describe_exc(exc)
        elif self.original_error:
            their_error = "the original does not import: " + self.original_error
        try:
            actual = jax.block_until_ready(run())
        except Exception as exc:
            detail = describe_exc(exc)
            if their_error == detail:
                record.update(status="unverifiable", detail="the original fails under {} the same way: {}".format(
                    name, detail))
            else:
                record.update(status="failed", detail=detail)
            return
        if their_error is not None:
            if run_original is not None:
                self.raised.append((name, their_error))
            ok, err, detail = self.compare(actual, own, labels)
            record.update(max_error=err, detail="the original raises here; compared with the rewrite's eager "
                          "values" if ok else "differs from the rewrite's own eager values: " + detail)
            if not ok:
                record["status"] = "failed"
            return
        ok, err, detail = self.compare(actual, theirs, labels)
        record["max_error"] = err
        if ok:
            return
        if self.expect == "wrong" and name in REWRITE_GRADS:  # the rule's wrong values are gradients
            self.differed.append((name, self.compare(theirs, actual, labels)[2].replace("expected", "the rewrite's")))
            ok, err, own_detail = self.compare(actual, own, labels)
            record.update(max_error=err, detail="the original gives other values here ({}); compared with the "
                          "rewrite's eager values".format(detail) if ok else own_detail)
            if not ok:
                record["status"] = "failed"
            return
        record.update(status="failed", detail="differs from the original: " + detail)

    def rewrite_hazard(self):
        codes = ", ".join(self.plan.get("codes", ())) or "the fix"
        if self.original_error and self.orig is None:
            return {"status": "confirmed", "detail": "the original fails at import: " + self.original_error}
        if self.raised:
            first = self.raised[0][1]
            where = ", ".join(n for n, _ in self.raised)
            return {"status": "confirmed", "detail": "the original raises under {}: {}".format(where, first),
                    "exception": first}
        if self.differed:
            where = ", ".join(n for n, _ in self.differed)
            return {"status": "confirmed", "detail": "the original gives other values under {}: {}".format(
                where, self.differed[0][1])}
        if self.expect == "none":
            return {"status": "none-expected", "detail": "the original runs and equals the rewrite everywhere, as "
                    "{} says on this JAX".format(codes)}
        return {"status": "not-reproduced", "detail": "the original runs and equals the rewrite under every "
                "transformation tried"}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
