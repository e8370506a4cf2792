"""The verify harness's Verifier (loaded by its path in the child processes; never imported by
vjplint): inputs made from the static descriptions (examples, factories, shapes probed with
`jax.eval_shape`), the reference values and gradients of the original, and the checks of a
residual-plus-None rewrite under eager, jit, vmap and grad, compared with tolerances by dtype.
The check-grads child's GradChecker subclasses it (vjplint/gradcheck/checker.py).
"""

import importlib
import importlib.util
import inspect
import itertools
import os
import sys
import zlib


def _load(folder, name):
    """vjplint/<folder>/<name>.py, loaded by its path once per process: the check runs as a script
    under `python -I` (or inside the recorded process), where vjplint need not be importable."""
    key = "_vjplint_{}_{}".format(folder, name)
    if key not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), folder, name + ".py")
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]
            raise
    return sys.modules[key]


P = _load("verify", "process")
Unverifiable, as_tuples, describe_exc, resolve = P.Unverifiable, P.as_tuples, P.describe_exc, P.resolve

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



class Verifier:
    SHAPES = SHAPES  # the shapes probed first (the check-grads child probes more)

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
        if self.plan.get("vararg"):  # only given calls say how many arguments `*args` takes
            raise Unverifiable("`{}` takes `*{}`: the number of arguments is not known, and no recorded call or "
                               "example gives it; give inputs: a recorded run (`check-grads PATH --record -- CMD`), "
                               "EXAMPLE_ARGS() or [tool.vjplint.verify] examples".format(
                                   self.plan["name"], self.plan["vararg"]["name"]))
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
        vararg = self.plan.get("vararg")
        if given > len(self.params) and vararg:  # `*args`: a parameter per argument past the named ones
            start = len(self.params)
            self.params = self.params + [
                {"kind": "unknown", "name": "{}[{}]".format(vararg["name"], i - start), "position": i,
                 "source": source, "role": "static" if i in vararg.get("static", ()) else "diff"}
                for i in range(start, given)]
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
        for shapes in (self.SHAPES, self.SHAPES + MORE_SHAPES):  # each round has MAX_PROBES tries
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
            if not (self.is_value(a) and self.is_value(e)):
                # An object returned beside the values (a function, a module: `build()` returning
                # the custom function it made): its identity differs per call, not its meaning.
                if type(a) is not type(e):
                    return False, None, "{} is a {}, expected a {}".format(where, type(a).__name__, type(e).__name__)
                continue
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

    @staticmethod
    def is_value(x) -> bool:
        """An array or a number, compared by value; anything else is compared by its type."""
        return hasattr(x, "dtype") or isinstance(x, (bool, int, float, complex))

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


