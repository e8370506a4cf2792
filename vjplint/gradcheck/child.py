"""The check-grads child: run as a script in a fresh Python process, never imported by vjplint.
`python -I -B child.py REQUEST.json RESULT.jsonl` (the protocol of vjplint/verify/harness.py:
JSON lines `start`, `imported` or `import-error`, `begin`/`function` per derivative, `done`).

It imports the user's module (from vjplint's temporary copy of its package), and for each
custom_vjp/custom_jvp makes inputs with the verification harness's synthesis (its Verifier),
then checks, in float64 when the backend has it:

* reverse mode (`jax.grad` of a random linear function of the output) against central finite
  differences, per argument, at order 1 and, where `grad` of `grad` runs, order 2;
* forward mode for a custom_jvp (a custom_vjp has none): the tangent against finite
  differences along a random direction, its linearity, and order 2 where it runs;
* the rule's primal output (`jax.vjp(f)[0]`, `jax.jvp(f)[0]`) against the primal function's;
* eager against `jit` and `vmap`, for the value and for the gradient.

Each failed check names its code (VJP501-VJP504) and a message with the measured error.
Only the standard library, NumPy, JAX and the harness module are used here.
"""

import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import traceback
import zlib


def _load_harness():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "verify", "harness.py")
    spec = importlib.util.spec_from_file_location("_vjplint_verify_harness", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


H = _load_harness()
H.SHAPES = H.SHAPES + ((2,), (2, 2))  # this process's copy of the harness: more shapes to probe
Unverifiable, describe_exc, resolve = H.Unverifiable, H.describe_exc, H.resolve

# Central differences: step (relative to max(1, |x|)), and the tolerance (atol + rtol * scale).
FD = {"float64": (1e-6, 1e-5, 1e-8), "float32": (1e-3, 3e-2, 3e-3)}
SAME = {"float64": 1e-9, "float32": 2e-5}  # eager vs jit/vmap, primal vs the rule's primal output
MAX_ELEMENTS = 32  # per argument: element by element up to this size, random directions beyond
DIRECTIONS = 4


class Retry(Exception):
    """The float64 run cannot start (the function rejects float64 inputs): run at the inputs' dtype."""


class GuessedShapes(Exception):
    """A rule raised at probed shapes: the guess may be the cause. Tried again at another probed
    rank; a failure only when it raises at every rank tried (at least two)."""

    def __init__(self, name, code, detail):
        super().__init__(detail)
        self.name, self.code, self.detail = name, code, detail


class OtherInputs(Exception):
    """These synthesised inputs cannot decide (the primal is NaN or inf there, or finite
    differences and the primal's own autodiff disagree with each other): try the next domain."""


# Where synthesised values are put, in turn, until the primal is finite and the references agree:
# (label, how a value drawn from (0.25, 1.75) is mapped). Values an example, EXAMPLE_ARGS(), a
# call site or a recording gives are never moved.
DOMAINS = (
    ("", None),
    ("in (0, 1)", ("interval", 0.05, 0.95)),
    ("of unit norm", ("unit",)),
    ("in rows that sum to one", ("simplex",)),
    ("above 2", ("interval", 2.5, 4.5)),
    ("below 0", ("interval", -1.75, -0.25)),
)
HOW_TO_GIVE = ("give real inputs: `vjplint check-grads --record -- pytest ...`, EXAMPLE_ARGS() in the module, or "
               "[tool.vjplint.verify] examples")


class GradChecker(H.Verifier):
    def __init__(self, jax, np, module, plan, x64, live=None):
        self.jax, self.np = jax, np
        self.jnp = importlib.import_module("jax.numpy")
        self.original_module = module
        self.plan, self.params, self.kind = plan, plan["params"], plan["kind"]
        self.checks, self.moved, self.inputs = [], set(), []
        self.x64 = x64
        self.domain, self.domain_label, self.choices = None, "", None
        # Parameters whose values are made up (an annotation or a guess gives only a shape).
        self.synth_params = {i for i, p in enumerate(self.params) if p.get("kind") in ("array", "float") and
                             str(p.get("source", "")).startswith(("assumed", "annotation"))}
        if plan.get("unverifiable"):
            raise Unverifiable(plan["unverifiable"])
        if live is not None:  # checked in the process that called it (vjplint.record): the live object
            self.fo = live
        else:
            try:
                self.fo = resolve(module, plan["qualname"])
            except AttributeError:
                raise Unverifiable("`{}` is not an attribute of the imported module".format(
                    plan["qualname"])) from None
        self.fr = self.fo
        self.plain = getattr(self.fo, "fun", None)  # the primal without its rule: the control
        self.rng = np.random.default_rng(11)

    def probe(self):
        """Shapes with which the value and the gradient trace (a bwd written for a scalar argument
        rejects a probed vector: that is the guess's fault); failing that, shapes with which the
        value traces, so that a rule broken at every shape fails a check instead of the probe.
        Probed once: the input domains tried later keep the shapes."""
        if self.choices is None:
            self.value_only = False
            try:
                self.choices = super().probe()
            except Unverifiable:
                self.value_only = True
                self.choices = super().probe()
        return self.choices

    def probed_ranks(self, args):
        """The ranks of the array arguments whose shapes were probed (empty when none was)."""
        return tuple(self.np.ndim(args[i]) for i, p in enumerate(self.params)
                     if i < len(args) and p.get("kind") == "array" and p.get("shape") is None and
                     str(p.get("source", "")).startswith("assumed") and hasattr(args[i], "shape"))

    def trace_original(self, args):
        if self.probed_ranks(args) in getattr(self, "ranks_tried", ()):
            raise ValueError("these ranks were tried")
        if not getattr(self, "value_only", True):
            return super().trace_original(args)
        diff = [i for i, p in enumerate(self.params)
                if p["role"] == "diff" and i not in self.untraced and self.traceable(args[i])]
        f = self.bind(self.fo, args, diff)
        vals = self.pick(args, diff)
        try:
            self.jax.eval_shape(f, *vals)
        except self.jax.errors.ConcretizationTypeError:
            f(*vals)

    # -- input domains --------------------------------------------------------------------------
    def make_value(self, spec, choices, sample, slot):
        value = super().make_value(spec, choices, sample, slot)
        if isinstance(slot, int) and spec.get("domain") == "unit":
            # The module's caller normalises this argument: its domain, not a guessed one.
            saved, self.domain = self.domain, ("unit",)
            try:
                return self.in_domain(value)
            finally:
                self.domain = saved
        if self.domain is None or not isinstance(slot, int) or slot not in self.synth_params:
            return value
        return self.in_domain(value)

    def in_domain(self, value):
        """A synthesised value (drawn from (0.25, 1.75)) moved into the current domain."""
        np, jnp, how = self.np, self.jnp, self.domain
        scalar = isinstance(value, float)
        if not scalar and not (hasattr(value, "dtype") and jnp.issubdtype(value.dtype, jnp.floating)):
            return value
        a = np.asarray(value, dtype=np.float64)
        u = (a - 0.25) / 1.5
        if how[0] == "interval" or a.ndim == 0 or a.size == 0:
            lo, hi = (how[1], how[2]) if how[0] == "interval" else (0.05, 0.95)
            b = lo + u * (hi - lo)
        elif how[0] == "unit":
            c = a - 1.0
            b = c / np.maximum(np.linalg.norm(c, axis=-1, keepdims=True), 1e-3)
        else:
            b = a / a.sum(axis=-1, keepdims=True)
        return float(b) if scalar else jnp.asarray(b, dtype=value.dtype)

    # -- recorded inputs (vjplint.record) ---------------------------------------------------------
    def make_samples(self):
        """Recorded arguments first (after [tool.vjplint.verify] examples, which the user names
        explicitly), then EXAMPLE_ARGS(), call sites and probing (the harness's order)."""
        recorded = self.plan.get("recorded")
        if recorded and not self.plan.get("example"):
            samples = self.recorded_samples(recorded)
            if samples is not None:
                return samples
        return super().make_samples()

    def recorded_samples(self, recorded):
        """Up to three recorded calls of the first signature whose calls load (repeated when
        fewer were recorded); arguments recorded as shape and dtype only (traced ones) get
        made-up values of that shape, which count as assumed."""
        import base64
        import pickle

        target = getattr(self.fo, "fun", self.fo)
        try:
            self.signature = inspect.signature(target)
        except (TypeError, ValueError):
            self.signature = None
        self.recorded_error = ""
        for group in recorded["signatures"]:
            try:  # live values (checked in the recording process) or pickled calls
                calls = group.get("values") or [pickle.loads(base64.b64decode(c)) for c in group["calls"]]
            except Exception as exc:
                self.recorded_error = describe_exc(exc)
                continue
            made = set()
            samples = []
            for k in range(H.BATCH):
                args = list(calls[k % len(calls)])
                for i, value in enumerate(args):
                    value = args[i] = self.plain_scalars(value)
                    filled = self.fill_abstract(value, k, i)
                    if filled is not value:
                        made.add(i)
                    args[i] = filled
                samples.append(args)
            seen = "{} call{} seen in the project's runs".format(group["count"], "s" if group["count"] != 1 else "")
            try:
                samples = self.samples_from_args(samples, "recorded: {}".format(seen))
            except Unverifiable as exc:
                self.recorded_error = str(exc)
                continue
            for i in made:
                self.inputs[i]["source"] = "assumed: values at a recorded shape ({})".format(seen)
            self.synth_params = set(made)
            return samples
        return None

    def plain_scalars(self, value):
        """JAX's typed Python scalars (a float subclass carrying a dtype, as JAX passes literals)
        as NumPy scalars of that dtype: their dtype must survive the comparison with jit."""
        np = self.np

        def one(x):
            if isinstance(x, (float, int)) and type(x) not in (float, int, bool) and hasattr(x, "dtype"):
                return np.asarray(x, dtype=str(x.dtype))
            return x
        return self.jax.tree_util.tree_map(one, value)

    def fill_abstract(self, value, sample, slot):
        """`value` with every shape-only marker replaced by values of that shape."""
        np, jax = self.np, self.jax

        def marker(x):
            return isinstance(x, tuple) and len(x) == 3 and x[0] == "__vjplint_abstract__"
        if not any(marker(x) for x in jax.tree_util.tree_leaves(value, is_leaf=marker)):
            return value
        rng = np.random.default_rng([zlib.crc32(self.plan["qualname"].encode()), sample, slot])

        def fill(x):
            if not marker(x):
                return x
            made = self.random_array(rng, tuple(x[1]), x[2])
            return self.in_domain(made) if self.domain is not None else made
        return jax.tree_util.tree_map(fill, value, is_leaf=marker)

    # -- set-up ---------------------------------------------------------------------------------
    def run(self):
        """The checks; a rule that raises at probed shapes is tried again at another probed rank
        (GuessedShapes): a failure only when it raises at every rank tried, at least two; else, with
        no rank deciding, "not checked at guessed shapes" with JAX's error."""
        self.ranks_tried, raised = set(), []
        while True:
            try:
                return self.run_once()
            except GuessedShapes as exc:
                raised.append((exc, self.probed_ranks(self.samples[0])))
                self.ranks_tried.add(raised[-1][1])
                self.choices = None
                if len(raised) >= 3:
                    break
            except Unverifiable as exc:
                if not raised:
                    raise
                if len(raised) < 2 or not str(exc).startswith("no probed shape"):
                    first, ranks = raised[0]
                    raise Unverifiable("not checked at guessed shapes: {} raises at the probed shapes (rank {}): {}; "
                                       "{}".format(first.name, ", ".join(map(str, ranks)) or "0", first.detail,
                                                   HOW_TO_GIVE)) from None
                break
        first, _ = raised[0]  # the last rank's other checks stay (run before the raise)
        self.record(first.name, "failed", "{} (at every probed rank: {})".format(
            first.detail, "; ".join(", ".join(map(str, r)) or "0" for _, r in raised)), first.code)
        return {"status": "failed", "reason": first.detail, "checks": self.checks, "inputs": self.inputs}

    def run_once(self):
        try:
            samples = self.make_samples()
        except Unverifiable as exc:
            # No rule registered once the module has been imported: JAX raises at every call.
            missing = re.search(r"AttributeError: No [JV]+P defined for custom_[jv]+p function \S+ using def[jv]+p\.",
                                str(exc))
            if not missing:
                raise
            code = "VJP501" if self.kind == "vjp" else "VJP502"
            detail = ("every call raises {} (no rule is registered once the module has been imported)".format(
                missing.group(0)))
            self.record("call", "failed", detail, code)
            return {"status": "failed", "reason": detail, "checks": self.checks, "inputs": self.inputs}
        args0 = samples[0]
        roles = [p["role"] for p in self.params] if self.params else ["diff"] * len(args0)
        self.positions = [i for i in range(len(args0)) if roles[i] != "static" and i not in self.untraced
                          and self.traceable(args0[i]) and self.is_real_float(args0[i])]
        if not self.positions:
            self.samples = samples  # the callers may still differentiate what the rule declares constant
            raise Unverifiable("no differentiable argument holds real floating-point values ({})".format(
                self.describe_inputs() or "no arguments"))
        self.names = [self.param_name(i) for i in self.positions]
        # The differentiated arguments whose values were made up, not given.
        self.synthetic = [self.param_name(i) for i in self.positions if i in self.synth_params and i < len(
            self.inputs) and str(self.inputs[i].get("source", "")).startswith(("assumed", "annotation"))]
        tried = []
        for label, how in (DOMAINS if self.synthetic else DOMAINS[:1]):
            if how is not None:
                self.domain, self.domain_label = how, label
                samples = self.make_samples()
                for item in self.inputs:
                    if item["name"] in self.synthetic:
                        item["source"] += "; values " + label
            self.samples, self.checks = samples, []
            try:
                return self.run_domain()
            except OtherInputs as exc:
                tried.append(str(exc))
        raise Unverifiable("no input domain tried decides: {}{}; {}".format(
            tried[0], " (and {} other domains: {})".format(len(tried) - 1, ", ".join(
                label for label, _ in DOMAINS[1:len(tried)])) if len(tried) > 1 else "", HOW_TO_GIVE))

    def run_domain(self):
        if self.x64:
            try:
                return self.run_at(True)
            except Retry:
                self.checks = []
        return self.run_at(False)

    def run_at(self, wide):
        jax = self.jax
        convert = self.widen if wide else (lambda v: v)
        base = list(self.samples[0])
        self.vals_s = [[convert(s[i]) for i in self.positions] for s in self.samples]
        self.vals = self.vals_s[0]
        self.F = self.bind(self.fo, base, self.positions)
        self.plain_F = self.bind(self.plain, base, self.positions) if self.plain is not None else None
        unit = [j for j, i in enumerate(self.positions) if i < len(self.params) and
                self.params[i].get("domain") == "unit"]
        if unit:
            # The module's callers pass these arguments normalised: the derivative is checked as
            # they use it (a rule may hold only on the unit sphere, e.g. a projected cotangent).
            self.F = self.through_normalisation(self.F, unit)
            if self.plain_F is not None:
                self.plain_F = self.through_normalisation(self.plain_F, unit)
        shown = list(base)
        for i, v in zip(self.positions, self.vals):
            shown[i] = v
        self.at = ", ".join("{}={}".format(self.param_name(i), self.summary(shown[i])) for i in range(len(shown)))
        if self.domain_label:
            self.at += " with values {}".format(self.domain_label)
        if unit:
            self.at += " ({} normalised as the module's caller does, `x / norm(x)`)".format(
                ", ".join("`{}`".format(self.names[j] if hasattr(self, "names") else j) for j in unit))
        try:
            self.out_s = [jax.block_until_ready(self.F(*v)) for v in self.vals_s]
        except Exception as exc:
            if wide:
                raise Retry() from None
            if not self.synthetic and self.plain_F is not None and self.runs(self.plain_F, self.vals_s[0]):
                # At inputs the project gave, the primal without its rule runs: the custom derivative
                # itself (its registration, its nondiff arguments) is what raises.
                detail = ("every call raises {} at {}, where the primal without its rule runs (inputs the project "
                          "gave)".format(describe_exc(exc), self.at))
                self.record("call", "failed", detail, "VJP501" if self.kind == "vjp" else "VJP502")
                return {"status": "failed", "reason": detail, "checks": self.checks, "inputs": self.inputs}
            raise Unverifiable("the function raises with the synthesised inputs ({}): {}".format(
                self.at, describe_exc(exc))) from None
        self.out = self.out_s[0]
        if self.synthetic and not all(self.finite(o) for o in self.out_s):
            raise OtherInputs("the primal returns NaN or inf at {}".format(self.at))
        self.weights = self.make_weights(self.out)
        leaves = [x for x in jax.tree_util.tree_leaves((self.vals, self.out)) if self.is_real_float(x)]
        self.prec = "float64" if wide and all(self.dtype_of(x) == "float64" for x in leaves) else "float32"
        if not self.weights:
            raise Unverifiable("the output has no floating-point values to differentiate ({})".format(self.at))
        self.argnums = tuple(range(len(self.positions)))
        self.L = lambda *v: self.loss(self.F(*v))
        self.grad = jax.grad(self.L, argnums=self.argnums)
        self.identity = self.returned_argument()
        # The second reference: the primal without its rule, differentiated by JAX itself.
        self.gp, self.ref_error, self.grad_plain = None, "", None
        if self.plain_F is None:
            self.ref_error = "the primal without its rule is not reachable"
        else:
            self.Lp = lambda *v: self.loss(self.plain_F(*v))
            self.grad_plain = jax.grad(self.Lp, argnums=self.argnums)
            try:
                self.gp = jax.block_until_ready(self.grad_plain(*self.vals))
            except Exception as exc:
                self.ref_error = "raises " + describe_exc(exc)
        try:
            self.g_s = [jax.block_until_ready(self.grad(*v)) for v in self.vals_s]
        except Exception as exc:
            if wide:
                try:
                    self.grad(*[self.samples[0][i] for i in self.positions])
                except Exception:
                    pass
                else:
                    raise Retry() from None
            self.g_s = None
            self.grad_exc = exc
            self.grad_error = "{}{}: {} at {}".format(self.reverse_what(), self.rule_where(exc, "bwd"),
                                                      describe_exc(exc), self.at)
        # A custom_jvp's forward checks come first: a broken tangent also breaks its transpose.
        for check in ((self.forward, self.reverse) if self.kind == "jvp" else (self.reverse, self.forward)):
            check()
        self.primal_output()
        self.transforms()
        self.nondiff_traced(convert)
        failed = [c for c in self.checks if c["status"] == "failed"]
        errors = [c for c in failed if c.get("severity") != "warning"]
        unsure = [c for c in self.checks if c["status"] == "unverifiable"]
        noted = [c for c in self.checks if c["status"] == "noted"]
        status = "failed" if errors else "warned" if failed else "unverified" if unsure else \
            "transform" if noted else "verified"
        reason = (errors or failed or unsure or noted or [{"detail": ""}])[0]["detail"]
        return {"status": status, "reason": reason, "checks": self.checks, "inputs": self.inputs,
                "precision": self.prec}

    def runs(self, f, vals):
        try:
            self.jax.block_until_ready(f(*vals))
            return True
        except Exception:
            return False

    def through_normalisation(self, f, unit):
        jnp = self.jnp

        def composed(*values):
            values = list(values)
            for j in unit:
                values[j] = values[j] / jnp.linalg.norm(values[j], axis=-1, keepdims=True)
            return f(*values)
        return composed

    @property
    def rev_code(self):
        return "VJP501" if self.kind == "vjp" else "VJP502"

    def reverse_what(self):
        return "reverse mode raises with the bwd rule" if self.kind == "vjp" else \
            "reverse mode (JAX transposes the jvp rule) raises"

    def finite(self, tree):
        np = self.np
        return all(bool(np.all(np.isfinite(np.asarray(x, dtype=np.complex128))))
                   for x in self.jax.tree_util.tree_leaves(tree) if self.is_real_float(x))

    def returned_argument(self):
        """The name of the argument the primal returns unchanged (every floating-point output is
        one of the differentiated arguments, bit for bit, in every sample), or ""."""
        np, jax = self.np, self.jax
        found = ""
        for out, vals in zip(self.out_s, self.vals_s):
            outs = [x for x in jax.tree_util.tree_leaves(out) if self.is_real_float(x)]
            if not outs:
                return ""
            for o in outs:
                o = np.asarray(o)
                hit = next((self.names[j] for j, v in enumerate(vals) for leaf in jax.tree_util.tree_leaves(v)
                            if np.shape(leaf) == o.shape and np.array_equal(np.asarray(leaf), o)), None)
                if hit is None:
                    return ""
                found = found or hit
        return found

    def rule_where(self, exc, which):
        """" (line N)": the deepest line of the module in the exception's traceback, else the
        line of the rule that JAX called ("the bwd rule `name`, line N"), or "" when unknown."""
        path = getattr(self.original_module, "__file__", None)
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if path and f.filename == path]
        if frames:
            return " (line {})".format(frames[-1].lineno)
        if self.kind == "jvp":
            which = "jvp"
        elif "fwd" in str(exc) and "bwd" not in str(exc):
            which = "fwd"
        fn = getattr(self.fo, which, None)
        code = getattr(fn, "__code__", None)
        if code is not None and path and code.co_filename == path:
            return " (the {} rule `{}`, line {})".format(which, getattr(fn, "__name__", which), code.co_firstlineno)
        return ""

    # -- records --------------------------------------------------------------------------------
    def record(self, name, status, detail="", code=None, max_error=None, severity=None):
        check = {"name": name, "status": status, "detail": detail, "code": code, "max_error": max_error}
        if severity:
            check["severity"] = severity
        self.checks.append(check)

    def deliberate_raise(self, exc):
        """" (line N)" when the exception comes from a `raise` statement in the module's own code
        (a rule that refuses to be differentiated on purpose, e.g. a `nondifferentiable` helper),
        else ""."""
        path = getattr(self.original_module, "__file__", None)
        frames = traceback.extract_tb(exc.__traceback__) if exc is not None else []
        if frames and path and frames[-1].filename == path:
            line = (frames[-1].line or "").strip()
            return " (line {})".format(frames[-1].lineno) if line.startswith("raise") else ""
        # The module's frames may be hidden from JAX's tracebacks (equinox hides its own): a rule
        # of the module whose body raises unconditionally (a top-level `raise`).
        import ast
        import textwrap
        for which in ("jvp", "fwd", "bwd"):
            fn = getattr(self.fo, which, None)
            code = getattr(fn, "__code__", None)
            if code is None or not path or code.co_filename != path:
                continue
            try:
                tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
            except (OSError, TypeError, SyntaxError):
                continue
            body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
            raising = [stmt for stmt in body if isinstance(stmt, ast.Raise)]
            named = not hasattr(ast, "unparse") or (raising and type(exc).__name__ in ast.unparse(raising[0]))
            if raising and named:
                return " (the {} rule `{}`, line {})".format(which, fn.__name__, code.co_firstlineno +
                                                             raising[0].lineno - 1)
        return ""

    def fail(self, name, code, detail, max_error=None, raised=False, control=None, exc=None):
        """A failed check. One that raises with inputs that were only assumed (no annotation, call
        site or example says what they are) is the rule's fault when the primal and its own
        autodiff run at the same inputs (`control` True); otherwise the guess may be the cause,
        and the check is unverifiable."""
        where = self.deliberate_raise(exc) if raised else ""
        if where:
            self.record(name, "noted", "not compared: the rule raises on purpose (a `raise` in the module's own "
                        "code{}), so it refuses to be differentiated this way: {}".format(where, detail), code,
                        severity="info")
            return
        assumed = [i["name"] for i in self.inputs if i.get("source", "").startswith("assumed")]
        if any(i.get("source", "").startswith("assumed: a nondiff argument") for i in self.inputs):
            control = False  # a guessed value in a nondiff slot may be what the rule cannot take
        if raised and assumed:
            if control and getattr(self, "samples", None) and self.probed_ranks(self.samples[0]) and \
                    not any(c.get("status") == "failed" for c in self.checks):
                raise GuessedShapes(name, code, detail)  # the guessed shapes may be the cause: another rank
            if control:
                detail += " (the primal and its own autodiff run at these assumed inputs: the rule is at fault)"
            else:
                self.record(name, "unverifiable", "{} (with assumed inputs {}, where the primal's own autodiff "
                            "fails too: {})".format(detail, ", ".join("`{}`".format(a) for a in assumed),
                                                    HOW_TO_GIVE))
                return
        self.record(name, "failed", detail, code, max_error)

    def judge(self, name, code, what, fd, ad, ref, order, j=None):
        """Compare the rule's derivative `ad` (flat) with finite differences `fd` and, when the
        primal's own autodiff runs, with it (`ref`). True when the check passed."""
        np = self.np
        _, rtol, atol = FD[self.prec]
        if order == 2:
            rtol, atol = rtol * 10, atol * 10
        err_fd, ok_fd = self.errors(ad, fd, rtol, atol)
        if ok_fd:
            self.record(name, "passed", max_error=err_fd)
            return True
        finite_ad, finite_fd = bool(np.all(np.isfinite(ad))), bool(np.all(np.isfinite(fd)))
        finite_ref = ref is not None and bool(np.all(np.isfinite(ref)))
        if finite_ref and finite_ad and self.errors(ad, ref, rtol, atol)[1]:
            self.record(name, "passed", "agrees with the primal's own autodiff (finite differences do not: {})"
                        .format(self.num(err_fd)), max_error=err_fd)
            return True
        where = "at {} (order {}, {}; tolerance {:g})".format(self.at, order, self.prec, rtol)
        if ref is not None and not finite_ref and finite_ad:
            return self.undecided(name, "the primal's own autodiff is NaN or inf at {}: the point may not be smooth "
                                  "(the reason a rule exists), so finite differences alone do not decide".format(
                                      self.at), order)
        if not finite_fd:
            return self.undecided(name, "finite differences of the primal are NaN or inf at {}".format(self.at),
                                  order)
        rule = "bwd rule" if self.kind == "vjp" else "jvp rule"
        if order == 1 and self.identity and ad.shape == fd.shape and float(np.max(np.abs(ad), initial=0.0)) <= atol:
            self.record(name, "failed", "{} may be wrong: the primal is the identity (it returns `{}` unchanged), so "
                        "the {} is a gradient transform, but it drops the gradient entirely (zero where finite "
                        "differences give max {}) at {}".format(what, self.identity, rule, self.num(float(np.max(
                            np.abs(fd), initial=0.0))), self.at), code, err_fd, "warning")
            return False
        if order == 1 and self.identity and ad.shape == fd.shape:
            self.record(name, "noted", "not compared with the true gradient: the primal is the identity (it returns "
                        "`{}` unchanged), so the {} is a gradient transform (clipping, scaling, reversal)".format(
                            self.identity, rule), code, err_fd, "info")
            return False
        if order == 1 and j is not None and self.straight_through(j, fd, ref, ad, atol):
            self.record(name, "noted", "not compared with the true gradient: the primal's derivative for `{}` is zero "
                        "while its value changes with `{}` (a piecewise-constant primal), so the {} is a "
                        "straight-through estimator".format(self.names[j], self.names[j], rule), code, err_fd, "info")
            return False
        if order == 1 and j is not None and self.passes_where_blocked(j, fd, ref, ad, rtol, atol):
            self.record(name, "noted", "not compared with the true gradient: the {} agrees with the primal's "
                        "derivative for `{}` wherever that is not zero, and passes a gradient where it is zero (the "
                        "primal masks, zeroes or rounds those elements), so it is a straight-through estimator".format(
                            rule, self.names[j]), code, err_fd, "info")
            return False
        if finite_ref:
            err_ref, ok_ref = self.errors(ref, fd, rtol, atol)
            if ok_ref:
                self.record(name, "failed", "{} differs from finite differences: max rel. error {} {}; the primal's "
                            "own autodiff agrees with finite differences and differs from the rule by {}".format(
                                what, self.num(err_fd), where, self.num(self.errors(ad, ref, rtol, atol)[0])),
                            code, err_fd)
                return False
            return self.undecided(name, "finite differences and the primal's own autodiff disagree (max rel. error "
                                  "{}): the point may not be smooth or not in the primal's domain, at {}".format(
                                      self.num(err_ref), self.at), order)
        if self.synthetic:
            why = self.ref_error if ref is None or order == 1 else "gives NaN or inf"
            self.record(name, "failed", "{} may be wrong: it differs from finite differences by max rel. error {} {}, "
                        "but the inputs were assumed ({}) and there is no second reference (the primal's own autodiff "
                        "{}); {}".format(what, self.num(err_fd), where, ", ".join("`{}`".format(n) for n in
                                                                                  self.synthetic),
                                         why or "is not available", HOW_TO_GIVE), code, err_fd, "warning")
            return False
        self.record(name, "failed", "{} differs from finite differences: max rel. error {} {}".format(
            what, self.num(err_fd), where), code, err_fd)
        return False

    def undecided(self, name, reason, order):
        if self.synthetic and order == 1:
            raise OtherInputs(reason)
        self.record(name, "unverifiable" if order == 1 else "skipped", reason)
        return False

    def straight_through(self, j, fd, ref, ad, atol):
        """The primal's derivative for argument j is zero here (both references), the rule's is
        not, and the primal's value changes when the argument moves by a finite step."""
        np = self.np
        if float(np.max(np.abs(fd), initial=0.0)) > atol or float(np.max(np.abs(ad), initial=0.0)) <= atol:
            return False
        if ref is not None and float(np.max(np.abs(ref), initial=0.0)) > atol:
            return False
        moved = list(self.vals)
        moved[j] = self.jax.tree_util.tree_map(lambda x: x + 0.37, moved[j])
        try:
            return abs(float(self.L(*moved)) - float(self.L(*self.vals))) > 1e-6
        except Exception:
            return False

    def scalar_beside_arrays(self, j):
        np = self.np
        ndim = [max([np.ndim(x) for x in self.jax.tree_util.tree_leaves(v)] or [0]) for v in self.vals]
        return ndim[j] == 0 and any(n > 0 for k, n in enumerate(ndim) if k != j)

    def none_slots(self):
        """Indices (into self.positions) of the differentiated arguments for which the bwd rule
        returns a literal None, found by calling fwd and bwd directly at the first inputs."""
        if self.kind != "vjp":
            return set()
        jax = self.jax
        fwd, bwd = getattr(self.fo, "fwd", None), getattr(self.fo, "bwd", None)
        nondiff = tuple(getattr(self.fo, "nondiff_argnums", ()) or ())
        if fwd is None or bwd is None or getattr(self.fo, "symbolic_zeros", False):
            return set()
        args = list(self.samples[0])
        for i, v in zip(self.positions, self.vals):
            args[i] = v
        try:
            out, res = fwd(*args)
            cts = bwd(*[args[i] for i in nondiff], res, jax.tree_util.tree_map(self.jnp.ones_like, out))
        except Exception:
            return set()
        if not isinstance(cts, (tuple, list)):
            return set()
        diff = [i for i in range(len(args)) if i not in nondiff]
        return {self.positions.index(i) for k, i in enumerate(diff)
                if k < len(cts) and cts[k] is None and i in self.positions}

    def passes_where_blocked(self, j, fd, ref, ad, rtol, atol):
        """Element by element (a small argument): the rule agrees with both references wherever the
        primal's derivative is not zero, and differs only where it is zero (a mask, a rounding),
        and it agrees somewhere it is not zero."""
        np = self.np
        size = sum(int(np.size(x)) for x in self.jax.tree_util.tree_leaves(self.vals[j]))
        if size > MAX_ELEMENTS or ad.shape != fd.shape or not np.all(np.isfinite(ad)):
            return False
        scale = max(float(np.max(np.abs(fd), initial=0.0)), float(np.max(np.abs(ad), initial=0.0)))
        bad = np.abs(ad - fd) > atol + rtol * scale
        if not bad.any() or bad.all():
            return False
        zero = np.abs(fd) <= atol
        if ref is not None:
            if ref.shape != fd.shape or not np.all(np.isfinite(ref)):
                return False
            zero &= np.abs(ref) <= atol
            if np.any(np.abs(ref - fd)[~bad] > atol + rtol * scale):
                return False
        return bool(np.all(zero[bad]) and np.any(~zero & ~bad))

    def flat(self, tree):
        np = self.np
        leaves = [np.asarray(x, dtype=np.float64).ravel() for x in self.jax.tree_util.tree_leaves(tree)]
        return np.concatenate(leaves) if leaves else np.zeros(0)

    # -- reverse mode ---------------------------------------------------------------------------
    def reverse(self):
        if self.g_s is None:
            self.fail("reverse order 1", self.rev_code, self.grad_error, raised=True, control=self.gp is not None,
                      exc=getattr(self, "grad_exc", None))
            return
        jax = self.jax
        g = self.g_s[0]
        L = self.fast(self.L)
        nones = self.none_slots()
        declared = []
        for j, name in enumerate(self.names):
            what = "bwd cotangent for `{}`".format(name) if self.kind == "vjp" else \
                "gradient for `{}` (reverse mode, JAX's transpose of the jvp rule)".format(name)
            refs = [g[j]] + ([self.gp[j]] if self.gp is not None else [])
            fd, ads = self.fd_compare(L, j, refs)
            if not self.judge("reverse order 1", self.rev_code, what, fd, ads[0], ads[1] if len(ads) > 1 else None,
                              1, j):
                last = self.checks[-1]
                if j not in nones or last["status"] != "failed" or last.get("severity") == "warning":
                    self.checks[-1:-1] = declared
                    return
                # `None` is the rule saying "not differentiated here": compare the others. For a scalar
                # beside array arguments (a temperature, a smoothing weight) it is noted; otherwise unsure.
                if self.scalar_beside_arrays(j):
                    last.update(status="noted", severity="info", detail=(
                        "not compared with the true gradient: the bwd rule returns None for `{}`, a scalar beside "
                        "array arguments (a hyperparameter it declares constant)".format(name)))
                    declared.append(self.checks.pop())
                    continue
                last["severity"] = "warning"
                last["detail"] = ("{} may be wrong: the bwd rule returns None for it (a zero cotangent: it declares "
                                  "`{}` not differentiated), right only if no caller differentiates `{}`; it {}; the "
                                  "other arguments were compared".format(what, name, name, last["detail"][len(what) + 1:]))
                declared.append(self.checks.pop())
                continue
            self.checks.pop()  # one record for all arguments
        if any(c["status"] == "failed" for c in declared):
            self.checks.extend(declared)
            return
        self.record("reverse order 1", "passed")
        self.checks.extend(declared)
        u = [self.random_like(v) for v in self.vals]

        def directional(grad):
            def hvp_scalar(*v):
                gv = grad(*v)
                return sum(self.jnp.sum(a * b) for a, b in zip(jax.tree_util.tree_leaves(gv),
                                                                 jax.tree_util.tree_leaves(u)))
            return hvp_scalar
        hvp_scalar = directional(self.grad)
        try:
            g2 = jax.block_until_ready(jax.grad(hvp_scalar, argnums=self.argnums)(*self.vals))
        except Exception as exc:
            self.record("reverse order 2", "skipped", "grad of grad raises: " + describe_exc(exc))
            return
        ref2 = None
        if self.grad_plain is not None and self.gp is not None:
            try:
                ref2 = jax.block_until_ready(jax.grad(directional(self.grad_plain), argnums=self.argnums)(*self.vals))
            except Exception:
                ref2 = None
        S = self.fast(hvp_scalar)
        rule = "the bwd rule" if self.kind == "vjp" else "the jvp rule"
        for j, name in enumerate(self.names):
            if j in nones:
                continue  # the rule's None: not differentiated, at order 2 either
            fd, ads = self.fd_compare(S, j, [g2[j]] + ([ref2[j]] if ref2 is not None else []))
            what = "second-order derivative for `{}` (grad of grad, through {})".format(name, rule)
            if not self.judge("reverse order 2", self.rev_code, what, fd, ads[0], ads[1] if len(ads) > 1 else None,
                              2):
                return
            self.checks.pop()
        self.record("reverse order 2", "passed")

    # -- forward mode ---------------------------------------------------------------------------
    def forward(self):
        if self.kind == "vjp":
            self.record("forward", "skipped", "a custom_vjp has no forward-mode rule")
            return
        jax = self.jax
        t = [self.random_like(v) for v in self.vals]
        ref, ref2 = None, None
        if self.plain_F is not None:
            try:
                ref = self.flat(jax.block_until_ready(jax.jvp(self.plain_F, tuple(self.vals), tuple(t))[1]))
            except Exception:
                ref = None
        try:
            y, ty = jax.block_until_ready(jax.jvp(self.F, tuple(self.vals), tuple(t)))
            _, ty2 = jax.block_until_ready(jax.jvp(self.F, tuple(self.vals), tuple(self.scale(v, 2.0) for v in t)))
        except Exception as exc:
            self.fail("forward order 1", "VJP502", "forward mode raises with the jvp rule{}: {} at {}".format(
                self.rule_where(exc, "jvp"), describe_exc(exc), self.at), raised=True, control=ref is not None, exc=exc)
            return
        self.rule_primal = y
        ok, err = self.same(ty2, jax.tree_util.tree_map(lambda a: a * 2, ty), 1e-6 if self.prec == "float64" else 1e-4)
        if not ok:
            n1, n2 = self.norm(ty), self.norm(ty2)
            factor = self.num(n2 / n1) if n1 else "inf"
            self.fail("forward linearity", "VJP502", "the jvp rule's tangent output is not linear in the input "
                      "tangents: doubling them scales it by {}, not 2, at {}".format(factor, self.at), err)
            return
        fd = self.flat(self.fd_directional(self.fast(self.F), t))
        ad = self.flat(ty)
        if not self.judge("forward order 1", "VJP502", "jvp tangent (along a random tangent)", fd, ad, ref, 1):
            return

        def tangent_of(f):
            return lambda *v: jax.jvp(f, tuple(v), tuple(t))[1]
        tangent = tangent_of(self.F)
        try:
            t2 = jax.block_until_ready(jax.jvp(tangent, tuple(self.vals), tuple(t))[1])
        except Exception as exc:
            self.record("forward order 2", "skipped", "jvp of jvp raises: " + describe_exc(exc))
            return
        if ref is not None:
            try:
                ref2 = self.flat(jax.block_until_ready(jax.jvp(tangent_of(self.plain_F), tuple(self.vals),
                                                               tuple(t))[1]))
            except Exception:
                ref2 = None
        fd2 = self.flat(self.fd_directional(self.fast(tangent), t))
        self.judge("forward order 2", "VJP502", "second-order forward derivative (jvp of jvp, through the jvp rule)",
                   fd2, self.flat(t2), ref2, 2)

    # -- the rule's primal output ---------------------------------------------------------------
    def primal_output(self):
        jax = self.jax
        if self.kind == "vjp":
            try:
                y = jax.block_until_ready(jax.vjp(self.F, *self.vals)[0])
            except Exception:
                self.record("primal output", "skipped", "jax.vjp raises (reported as a reverse-mode failure)")
                return
            who = "fwd's primal output"
        else:
            y = getattr(self, "rule_primal", None)
            if y is None:
                self.record("primal output", "skipped", "jax.jvp raises (reported as a forward-mode failure)")
                return
            who = "the jvp rule's primal output"
        problem = self.structure_problem(y, self.out)
        if problem:
            self.fail("primal output", "VJP503", "{} {}, at {}".format(who, problem, self.at))
            return
        ok, err = self.same(y, self.out, SAME[self.prec])
        if not ok:
            self.fail("primal output", "VJP503", "{} differs from the primal function's output: max rel. error {} at "
                      "{} ({})".format(who, self.num(err), self.at, self.prec), err)
            return
        self.record("primal output", "passed")


    # -- jit and vmap ---------------------------------------------------------------------------
    def transforms(self):
        jax = self.jax
        stacked = [self.stack([v[j] for v in self.vals_s]) for j in range(len(self.positions))]
        out_b = self.stack(self.out_s)
        jit_ok = self.transform("jit", "the output", lambda: jax.jit(self.F)(*self.vals), self.out,
                                lambda: jax.jit(self.plain_F)(*self.vals))
        vmap_ok = self.transform("vmap", "the output", lambda: jax.vmap(self.F)(*stacked), out_b,
                                 lambda: jax.vmap(self.plain_F)(*stacked))
        if self.g_s is None:
            return
        g_b = self.stack(self.g_s)
        gp = self.grad_plain if self.gp is not None else None
        if jit_ok:
            self.transform("jit(grad)", "the gradient", lambda: jax.jit(self.grad)(*self.vals), self.g_s[0],
                           (lambda: jax.jit(gp)(*self.vals)) if gp is not None else None)
        if vmap_ok:
            self.transform("vmap(grad)", "the gradient", lambda: jax.vmap(self.grad)(*stacked), g_b,
                           (lambda: jax.vmap(gp)(*stacked)) if gp is not None else None)

    def nondiff_traced(self, convert):
        """An array in nondiff_argnums, traced as a caller that jits or differentiates it would
        pass it: under jit as an argument, then differentiated. JAX raises for a custom_vjp
        (UnexpectedTracerError), a custom_jvp gives a zero gradient for it. A "may" warning: no
        caller may ever trace it."""
        jax, np = self.jax, self.np
        base = list(self.samples[0])
        nondiff = sorted(set(getattr(self.fo, "nondiff_argnums", ()) or ()))
        for i in nondiff:
            value = base[i] if i < len(base) else None
            if i in self.positions or isinstance(value, (bool, int, float, complex)) or not (
                    hasattr(value, "shape") and hasattr(value, "dtype")) or not self.is_real_float(value):
                continue
            name = self.param_name(i)
            positions = list(self.positions) + [i]
            vals = list(self.vals) + [convert(value)]
            G = self.bind(self.fo, base, positions)
            Gp = self.bind(self.plain, base, positions) if self.plain is not None else None
            check = "nondiff `{}` traced".format(name)
            advice = ("keep `{}` out of nondiff_argnums (its rule returning a zero or None cotangent for it) or make "
                      "sure no caller traces it".format(name))
            k = len(positions) - 1
            for how, run, control in (
                    ("under jit with `{}` as an argument".format(name), lambda: jax.jit(G)(*vals),
                     (lambda: jax.jit(Gp)(*vals)) if Gp is not None else None),
                    ("differentiated with respect to `{}`".format(name),
                     lambda: jax.grad(lambda *v: self.loss(G(*v)), argnums=k)(*vals),
                     (lambda: jax.grad(lambda *v: self.loss(Gp(*v)), argnums=k)(*vals)) if Gp is not None else None)):
                try:
                    got = jax.block_until_ready(run())
                except Exception as exc:
                    try:
                        ref = jax.block_until_ready(control()) if control is not None else None
                    except Exception:
                        ref = None
                    if ref is None:
                        self.record(check, "skipped", "raises {} without its rule too".format(how))
                        break
                    self.record(check, "failed", "may raise when a caller traces `{}` (an array in nondiff_argnums): "
                                "{} it raises {} (the primal without its rule runs) at {}; {}".format(
                                    name, how, describe_exc(exc), self.at, advice),
                                "VJP504" if "jit" in how else self.rev_code, severity="warning")
                    break
                if "jit" in how:
                    continue
                ref_g = self.try_grad(Gp, k, vals)
                saved = self.vals
                self.vals = vals
                try:
                    fd, ads = self.fd_compare(self.fast(lambda *v: self.loss(G(*v))), k,
                                              [got] + ([ref_g] if ref_g is not None else []))
                finally:
                    self.vals = saved
                _, rtol, atol = FD[self.prec]
                err, ok = self.errors(ads[0], fd, rtol, atol)
                if ok or not np.all(np.isfinite(fd)) or (len(ads) > 1 and self.errors(ads[0], ads[1], rtol, atol)[1]) \
                        or (len(ads) > 1 and not self.errors(ads[1], fd, rtol, atol)[1]):
                    self.record(check, "passed", max_error=err)
                    break
                self.record(check, "failed", "gradient for `{}` may be wrong: it is in nondiff_argnums but holds an "
                            "array, and {} (as a caller that traces it would) the gradient differs from finite "
                            "differences by max rel. error {} at {}; {}".format(
                                name, how, self.num(err), self.at, advice), self.rev_code, err, "warning")

    def try_grad(self, f, k, vals):
        if f is None:
            return None
        try:
            return self.jax.block_until_ready(self.jax.grad(lambda *v: self.loss(f(*v)), argnums=k)(*vals))
        except Exception:
            return None

    def transform(self, name, what, run, expected, control):
        """True when the transformation could be checked (passed or failed), False when skipped."""
        try:
            actual = self.jax.block_until_ready(run())
        except Exception as exc:
            ran = None
            if control is not None and self.plain_F is not None:
                try:
                    self.jax.block_until_ready(control())
                    ran = True
                except Exception as control_exc:
                    self.record(name, "skipped", "the primal without its rule fails under {} too: {}".format(
                        name, describe_exc(control_exc)))
                    return False
            self.fail(name, "VJP504", "raises under {} but not eagerly{}: {} at {}".format(
                name, self.rule_where(exc, "bwd"), describe_exc(exc), self.at), raised=True, control=ran)
            return True
        problem = self.structure_problem(actual, expected)
        if problem:
            self.fail(name, "VJP504", "{} under {} {}, at {}".format(what, name, problem, self.at))
            return True
        ok, err = self.same(actual, expected, SAME[self.prec])
        if not ok:
            where = self.worst_label(actual, expected) if what == "the gradient" else ""
            self.fail(name, "VJP504", "{}{} under {} differs from eager: max rel. error {} at {} ({}{})".format(
                what, where, name, self.num(err), self.at, "a batch of 3, " if "vmap" in name else "",
                self.prec), err)
            return True
        self.record(name, "passed", max_error=err)
        return True

    # -- finite differences -----------------------------------------------------------------------
    def fast(self, f):
        """`f` under jit when that runs and agrees with the eager value (finite differences call it
        often); `f` itself otherwise."""
        jax = self.jax
        try:
            jitted = jax.jit(f)
            a, e = jax.block_until_ready(jitted(*self.vals)), jax.block_until_ready(f(*self.vals))
            if self.same(a, e, SAME[self.prec] * 10)[0]:
                return jitted
        except Exception:
            pass
        return f

    def fd_compare(self, S, j, ads):
        """Central differences of the scalar function S along argument j, and each derivative of
        `ads` brought to the same form: element by element for small arguments (elements that
        are not finite, such as an infinite initial value, are left out), along random
        directions beyond. Returns (fd, [ad, ...]) as flat float64 arrays."""
        np, jax = self.np, self.jax
        eps = FD[self.prec][0]
        value = self.vals[j]
        leaves, treedef = jax.tree_util.tree_flatten(value)
        size = sum(int(np.size(x)) for x in leaves)
        flats = [self.flat(ad) for ad in ads]
        if size <= MAX_ELEMENTS:
            fd_flat, keep, offset = [], [], 0
            for li, leaf in enumerate(leaves):
                base = np.asarray(leaf, dtype=np.float64).ravel()
                for k in range(base.size):
                    if not np.isfinite(base[k]):
                        continue
                    h = eps * max(1.0, abs(base[k]))
                    plus, minus = base.copy(), base.copy()
                    plus[k] += h
                    minus[k] -= h
                    fp = self.scalar(S, j, treedef, leaves, li, plus)
                    fm = self.scalar(S, j, treedef, leaves, li, minus)
                    fd_flat.append((fp - fm) / (2 * h))
                    keep.append(offset + k)
                offset += base.size
            return np.asarray(fd_flat), [a[keep] if a.size == offset else a for a in flats]
        fd, projected = [], [[] for _ in flats]
        arrays = [np.asarray(x, dtype=np.float64) for x in leaves]
        finite = [np.isfinite(x) for x in arrays]
        big = max([1.0] + [float(np.max(np.abs(x[m]))) for x, m in zip(arrays, finite) if m.any()])
        for _ in range(DIRECTIONS):
            d = [self.rng.standard_normal(np.shape(x)) * m for x, m in zip(arrays, finite)]
            h = eps * big
            plus = [np.where(m, x + h * di, x) for x, di, m in zip(arrays, d, finite)]
            minus = [np.where(m, x - h * di, x) for x, di, m in zip(arrays, d, finite)]
            fp = self.scalar_tree(S, j, treedef, leaves, plus)
            fm = self.scalar_tree(S, j, treedef, leaves, minus)
            fd.append((fp - fm) / (2 * h))
            direction = np.concatenate([di.ravel() for di in d]) if d else np.zeros(0)
            for p, a in zip(projected, flats):
                p.append(float(np.dot(np.nan_to_num(a, nan=np.nan), direction)) if a.size == direction.size
                         else float("nan"))
        return np.asarray(fd), [np.asarray(p) for p in projected]

    def errors(self, ad, fd, rtol, atol):
        """(max rel. error, ok): ok when both are finite and |ad - fd| <= atol + rtol * scale."""
        np = self.np
        if ad.shape != fd.shape:
            return float("inf"), False
        if not (np.all(np.isfinite(ad)) and np.all(np.isfinite(fd))):
            return float("inf"), False
        diff = float(np.max(np.abs(ad - fd))) if ad.size else 0.0
        scale = max(float(np.max(np.abs(fd))), float(np.max(np.abs(ad)))) if fd.size else 0.0
        return diff / max(scale, 1e-300) if diff else 0.0, diff <= atol + rtol * scale

    def rebuild(self, like, flat):
        jnp = self.jnp
        if isinstance(like, float):
            return float(flat.reshape(()))
        return jnp.asarray(flat.reshape(self.np.shape(like)), dtype=like.dtype)

    def scalar(self, S, j, treedef, leaves, li, flat):
        new = list(leaves)
        new[li] = self.rebuild(leaves[li], flat)
        return self.scalar_tree(S, j, treedef, leaves, [self.np.asarray(x, dtype=self.np.float64) for x in new])

    def scalar_tree(self, S, j, treedef, leaves, arrays):
        new = [self.rebuild(like, self.np.asarray(a, dtype=self.np.float64)) for like, a in zip(leaves, arrays)]
        vals = list(self.vals)
        vals[j] = self.jax.tree_util.tree_unflatten(treedef, new)
        return float(self.np.real(self.np.asarray(S(*vals))))

    def fd_directional(self, f, t):
        """(f(x + h t) - f(x - h t)) / 2h, leaf by leaf, as float64 NumPy arrays."""
        np, jax = self.np, self.jax
        eps = FD[self.prec][0]
        finite = [np.asarray(x, dtype=np.float64) for x in jax.tree_util.tree_leaves(self.vals) if np.size(x)]
        big = max([1.0] + [float(np.max(np.abs(x[np.isfinite(x)]))) for x in finite if np.isfinite(x).any()])
        h = eps * big
        plus = [self.shift(v, d, h) for v, d in zip(self.vals, t)]
        minus = [self.shift(v, d, -h) for v, d in zip(self.vals, t)]
        fp, fm = f(*plus), f(*minus)
        return jax.tree_util.tree_map(lambda a, b: (np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))
                                      / (2 * h), fp, fm)

    def shift(self, value, direction, h):
        jax, np = self.jax, self.np
        return jax.tree_util.tree_map(
            lambda x, d: self.rebuild(x, np.asarray(x, dtype=np.float64) + h * np.asarray(d, dtype=np.float64)),
            value, direction)


    # -- comparison helpers -----------------------------------------------------------------------
    def same(self, actual, expected, rtol):
        """(ok, max rel. error) for two trees of the same structure: |a - e| <= rtol * max|e| + rtol."""
        np, jax = self.np, self.jax
        worst, ok = 0.0, True
        for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)):
            a, e = np.asarray(a), np.asarray(e)
            if a.shape != e.shape:
                return False, float("inf")
            if e.dtype.kind not in "fc":
                if not np.array_equal(a, e):
                    return False, float("inf")
                continue
            a64, e64 = a.astype(np.complex128), e.astype(np.complex128)
            nan = np.isnan(a64) | np.isnan(e64)
            if (np.isnan(a64) != np.isnan(e64)).any():
                return False, float("inf")
            diff = float(np.max(np.where(nan, 0, np.abs(a64 - e64)))) if a.size else 0.0
            scale = float(np.max(np.where(nan, 0, np.abs(e64)))) if e.size else 0.0
            if not np.isfinite(diff):
                diff = 0.0 if np.array_equal(a64, e64) else float("inf")
            both = max(scale, float(np.max(np.where(nan, 0, np.abs(a64)))) if a.size else 0.0)
            worst = max(worst, diff / max(both, 1e-300) if diff else 0.0)
            if diff > rtol * max(scale, 1.0):
                ok = False
        return ok, worst

    def structure_problem(self, actual, expected):
        np, jax = self.np, self.jax
        ta, te = jax.tree_util.tree_structure(actual), jax.tree_util.tree_structure(expected)
        if ta != te:
            return "has the structure {}, the primal's is {}".format(ta, te)
        for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)):
            if np.shape(a) != np.shape(e):
                return "has shape {}, expected {}".format(tuple(np.shape(a)), tuple(np.shape(e)))
            da, de = self.dtype_of(a), self.dtype_of(e)
            if da != de:
                return "has dtype {}, expected {}".format(da, de)
        return ""

    def worst_label(self, actual, expected):
        np = self.np
        worst, label = -1.0, ""
        for j, name in enumerate(self.names):
            a = [np.asarray(x, dtype=np.float64) for x in self.jax.tree_util.tree_leaves(actual[j])]
            e = [np.asarray(x, dtype=np.float64) for x in self.jax.tree_util.tree_leaves(expected[j])]
            d = max([float(np.max(np.abs(x - y))) if x.size else 0.0 for x, y in zip(a, e)] or [0.0])
            if d > worst:
                worst, label = d, " for `{}`".format(name)
        return label

    # -- values -----------------------------------------------------------------------------------
    def widen(self, value):
        jnp = self.jnp

        def one(x):
            if isinstance(x, float):
                return x
            if self.dtype_of(x) in ("float32", "float16", "bfloat16"):
                return jnp.asarray(x, dtype=jnp.float64)
            return x
        return self.jax.tree_util.tree_map(one, value)

    def random_like(self, value):
        jnp = self.jnp
        np = self.np  # zero where the value is not finite (an infinite initial value stays put)
        return self.jax.tree_util.tree_map(
            lambda x: (float(self.rng.uniform(0.5, 1.5)) if np.isfinite(x) else 0.0) if isinstance(x, float) else
            jnp.asarray(self.rng.uniform(0.5, 1.5, np.shape(x)) * np.isfinite(np.asarray(x)), dtype=x.dtype), value)

    def scale(self, value, factor):
        return self.jax.tree_util.tree_map(lambda x: x * factor, value)

    def norm(self, tree):
        np = self.np
        return float(np.sqrt(sum(float(np.sum(np.abs(np.asarray(x, dtype=np.float64)) ** 2))
                                 for x in self.jax.tree_util.tree_leaves(tree))))

    def dtype_of(self, x):
        if isinstance(x, float):
            return "float64" if self.x64 else "float32"
        return str(getattr(x, "dtype", type(x).__name__))

    def is_real_float(self, value):
        leaves = self.jax.tree_util.tree_leaves(value)
        if not leaves:
            return False
        for leaf in leaves:
            if isinstance(leaf, (bool, int, complex)):
                return False
            if isinstance(leaf, float):
                continue
            dtype = getattr(leaf, "dtype", None)
            if dtype is None or not self.jnp.issubdtype(dtype, self.jnp.floating):
                return False
        return True

    @staticmethod
    def num(value):
        return "{:.3g}".format(value)


# -- the module's own callers (issue #35): a rule that is right in isolation may still be used
# -- wrongly, or reached by a transform it does not support, by the functions that call it ---------
FORWARD_ON_VJP = re.compile(r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp function")


def caller_slots(fn, names, last):
    """Which of the derivative's arguments `fn` takes, by position: its parameters named like the
    derivative's (a caller that passes them through), else all of them in order when the arity
    fits; a caller taking only `*args` gets what the previous caller took (`last`). None: none fit."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.KEYWORD_ONLY and p.default is p.empty for p in params):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    if not positional and varargs:
        return last
    if required and all(p.name in names for p in required):
        return [names.index(p.name) for p in required]
    n = len(names)
    if len(required) <= n and (varargs or n <= len(positional)):
        return list(range(n))
    return None


def check_callers(checker, module, result, callers, only_grad=False):
    """Run each module-level caller of the derivative (one that takes the derivative's own
    arguments) eagerly, under jit and under grad, and compare its gradient with finite
    differences of the caller. Only where the derivative's own checks passed: a caller that
    raises under a transform where eager works, or whose gradient disagrees with finite
    differences, uses the derivative wrongly. Reported as "may" warnings: the inputs are the ones
    made for the derivative, not the caller's own."""
    if result.get("status") not in ("verified", "transform") or not callers or not getattr(checker, "positions", None):
        return result
    jax, np = checker.jax, checker.np
    code = "VJP501" if checker.kind == "vjp" else "VJP502"
    full, all_vals = list(checker.samples[0]), list(checker.vals)
    names = [checker.param_name(i) for i in range(len(full))]
    found = []
    last = None
    for name in callers:
        fn = getattr(module, name, None)
        slots = caller_slots(fn, names, last) if callable(fn) else None
        if slots is None:
            continue
        last = slots
        base = [full[i] for i in slots]
        positions = [j for j, i in enumerate(slots) if i in checker.positions]
        if not positions:
            continue
        where = "its caller `{}` (with the inputs made for `{}`: {})".format(
            name, checker.plan["qualname"], checker.describe_inputs() or "no arguments")
        try:
            out = jax.block_until_ready(fn(*base))
        except Exception as exc:
            if FORWARD_ON_VJP.search(str(exc)):
                found.append(("caller", "{} applies forward-mode autodiff (jax.jvp, jacfwd) to this custom_vjp, and "
                              "JAX raises {}; a custom_vjp supports reverse mode only: use jax.grad/jacrev/vjp "
                              "in the caller, or define the rule with custom_jvp".format(where, describe_exc(exc))))
            continue
        leaves = jax.tree_util.tree_leaves(out)
        if not leaves or not all(checker.is_real_float(x) for x in leaves):
            continue
        try:
            if only_grad:
                raise StopIteration
            jax.block_until_ready(jax.jit(fn)(*base))
        except StopIteration:
            pass
        except Exception as exc:
            if "custom_" in traceback.format_exc() and "Concretization" not in type(exc).__name__ \
                    and "TracerBool" not in type(exc).__name__:
                found.append(("caller jit", "{} works eagerly but raises under jax.jit: {}".format(
                    where, describe_exc(exc))))
            continue
        if result.get("status") != "verified":
            continue  # a gradient transform differs from finite differences on purpose: not compared
        weights = checker.random_like(jax.tree_util.tree_map(lambda x: np.asarray(x, dtype=np.float64), out))
        F = checker.bind(fn, base, positions)

        def scalar(*vals, F=F, weights=weights):
            o = F(*vals)
            return sum(checker.jnp.sum(checker.jnp.asarray(a, dtype=checker.jnp.float64 if checker.x64 else
                                                           checker.jnp.float32) * w)
                       for a, w in zip(jax.tree_util.tree_leaves(o), jax.tree_util.tree_leaves(weights)))
        vals = [all_vals[checker.positions.index(slots[j])] for j in positions]
        checker.vals = vals  # what fd_directional shifts
        try:
            g = jax.grad(scalar, argnums=tuple(range(len(vals))))(*vals)
        except Exception as exc:
            if FORWARD_ON_VJP.search(str(exc)) or "custom_" in traceback.format_exc():
                found.append(("caller grad", "{} works eagerly but raises under jax.grad: {}".format(
                    where, describe_exc(exc))))
            continue
        worst = 0.0
        disagree = 0
        trials = 3
        for _ in range(trials):
            t = checker.random_like(vals)
            try:
                fd = float(np.sum(checker.fd_directional(scalar, t)))
            except Exception:
                disagree = 0
                break
            ad = float(sum(np.sum(np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64))
                           for a, b in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(t))))
            if not (np.isfinite(fd) and np.isfinite(ad)):
                disagree = 0
                break
            err = abs(fd - ad) / max(abs(fd), abs(ad), 1e-12)
            if abs(fd) > 1e-6 and err > 0.2:
                disagree += 1
                worst = max(worst, err)
        if disagree == trials:
            found.append(("caller grad", "the gradient of {} differs from finite differences of the caller "
                          "(max rel. error {:.3g}) {}".format(where, worst, (
                              "with respect to arguments the rule declares constant (e.g. an array in "
                              "`nondiff_argnums`, whose gradient JAX drops or the rule zeroes): make them "
                              "differentiable arguments of the rule" if only_grad else
                              "where the derivative's own checks agree: the caller may take another path under "
                              "differentiation (e.g. it tests for a JVPTracer, or stops the gradient); "
                              "differentiate the caller as written"))))
    for name, detail in found:
        checker.record(name, "failed", detail, code, severity="warning")
    if found:
        result = dict(result, status="warned", reason=found[0][1], checks=checker.checks)
    return result


def check_constant_arguments(checker, module, result, callers):
    """The rule differentiates none of its arguments, yet some hold real floating-point arrays
    (e.g. an array in `nondiff_argnums`): the module's callers are differentiated with respect to
    them, and a gradient that disagrees with finite differences of the caller is reported."""
    samples = getattr(checker, "samples", None)
    if not samples or not callers or not str(result.get("reason", "")).startswith("no differentiable argument"):
        return result
    for label, how in DOMAINS:  # the first input domain where the rule's output is finite
        if how is not None:
            checker.domain = how
            try:
                samples = checker.make_samples()
            except Exception:
                continue
        try:
            out = checker.fo(*samples[0])
            if all(checker.np.isfinite(checker.np.asarray(x)).all() for x in checker.jax.tree_util.tree_leaves(out)):
                break
        except Exception:
            continue
    else:
        return result
    checker.samples = samples
    args0 = samples[0]
    positions = [i for i, v in enumerate(args0) if not isinstance(v, float) and checker.traceable(v)
                 and checker.is_real_float(v) and checker.np.ndim(v) > 0]
    if not positions:
        return result
    checker.positions, checker.checks = positions, []
    wide = checker.x64
    checker.vals = [checker.widen(args0[i]) if wide else args0[i] for i in positions]
    checker.prec = "float64" if wide else "float32"
    found = check_callers(checker, module, {"status": "verified"}, callers, only_grad=True)
    if found.get("status") != "warned":
        return result
    return dict(result, status="warned", reason=found["reason"], checks=checker.checks,
                inputs=getattr(checker, "inputs", []))


def check_one(jax, numpy, module, plan, x64, live=None):
    """One derivative's verdict: {"status", "reason", "checks", "inputs"}."""
    checker = None
    try:
        checker = GradChecker(jax, numpy, module, plan, x64, live)
        return check_callers(checker, module, checker.run(), plan.get("callers", []))
    except Unverifiable as exc:
        result = {"status": "unverified", "reason": str(exc), "checks": [], "inputs": []}
        try:
            if checker is not None:
                result = check_constant_arguments(checker, module, result, plan.get("callers", []))
        except Exception:
            pass
        return result
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"status": "unverified", "reason": "the checker failed: " + describe_exc(exc),
                "checks": [], "inputs": [], "traceback": traceback.format_exc(limit=6)}


def check_live(jax, numpy, obj, plan, calls, count, x64, module=None):
    """Check a live custom derivative (the object the project's run called, wherever it was made)
    at each of its recorded concrete calls (`calls`: argument lists, spread over the values seen),
    each in turn first. The first call at which it fails (or may be wrong) gives the verdict; a
    call where nothing decides (the primal not smooth there, its autodiff NaN) is passed over;
    a pass says at how many recorded calls it passed ("checked_at")."""
    seen = "{} call{} seen in the project's runs".format(count, "s" if count != 1 else "")
    passed, undecided = [], None
    for k in range(len(calls)):
        rotated = [list(c) for c in calls[k:] + calls[:k]]
        one = dict(plan, recorded={"signatures": [{"signature": "", "count": count, "abstract": False,
                                                   "values": rotated}]})
        result = check_one(jax, numpy, module, one, x64, live=obj)
        status = result.get("status")
        if status in ("verified", "transform"):
            passed.append(result)
            continue
        if status == "unverified":
            undecided = undecided or result
            continue
        if k:
            result["reason"] = (result.get("reason") or "") + " (at recorded call {} of {})".format(k + 1, len(calls))
        result["checked_at"], result["seen"] = k + 1, seen
        return result
    if not passed:
        result = undecided or {"status": "unverified", "reason": "no concrete call was recorded", "checks": [],
                               "inputs": []}
        if undecided is not None and len(calls) > 1:
            result["reason"] = (result.get("reason") or "") + " (and at every other recorded call: {} in all)".format(
                len(calls))
        return result
    result = passed[0]
    result["checked_at"], result["seen"] = len(passed), seen
    return result


def main(argv):
    request_path, result_path = argv[1], argv[2]
    H.exit_with_parent()
    emit = H.Emitter(result_path)
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    sys.stdout = sys.stderr  # the user's prints must not mix with anything we parse
    modules = request.get("modules") or [request]  # several: one process opens the device once
    sys.path[:0] = modules[0]["sys_path"] + [p for p in request.get("python_path", [])
                                             if p not in modules[0]["sys_path"]]
    try:
        import jax
        import numpy
    except BaseException as exc:
        emit(event="no-jax", detail=describe_exc(exc), python=sys.executable)
        return 0
    chip = H.hold_the_chip(emit)  # noqa: F841 (held until this process exits)
    device = jax.devices()[0]
    x64 = device.platform != "tpu"  # TPUs have no native float64
    if x64:
        jax.config.update("jax_enable_x64", True)
    else:  # a TPU's default float32 matmul keeps about three digits: too few for finite differences
        jax.config.update("jax_default_matmul_precision", "highest")
    label = "cpu" if device.platform == "cpu" else str(device)
    emit(event="start", device=label, device_kind=getattr(device, "device_kind", ""), jax_version=jax.__version__,
         python=sys.version.split()[0])
    for index, one in enumerate(modules):
        if "modules" in request:
            emit(event="module", index=index)
            sys.path[:0] = [p for p in one["sys_path"] if p not in sys.path]
        check_module(emit, jax, numpy, one, x64)
    return 0


def check_module(emit, jax, numpy, request, x64):
    try:
        module = importlib.import_module(request["module_name"])
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from user code included
        emit(event="import-error", which="original", detail=describe_exc(exc),
             where=H._user_frame(exc, request["path"]))
        emit(event="done")
        return
    emit(event="imported")
    for plan in request["functions"]:
        emit(event="begin", name=plan["qualname"])
        emit(event="function", name=plan["qualname"], **check_one(jax, numpy, module, plan, x64))
    emit(event="done")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
