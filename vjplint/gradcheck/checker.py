"""The check-grads child's checker of one custom derivative (loaded by its path; never imported
by vjplint): GradChecker, the harness's Verifier (vjplint/verify/verifier.py) with its own inputs
(inputs.py), its checks mode by mode (modes.py) and its numbers (numerics.py); here, the set-up
(probing, domains, the references) and how an outcome is recorded and judged.
"""

import contextlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback


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
V = _load("verify", "verifier")
N = _load("gradcheck", "numerics")
Inputs, Modes = _load("gradcheck", "inputs").Inputs, _load("gradcheck", "modes").Modes
Unverifiable, describe_exc, resolve = P.Unverifiable, P.describe_exc, P.resolve
FD, MAX_ELEMENTS = N.FD, N.MAX_ELEMENTS


class Retry(Exception):
    """The float64 run cannot start (the function rejects float64 inputs): run at the inputs' dtype."""


class Narrow(Exception):
    """The module raises with float64 enabled, at the project's own values too, and runs with it off
    (a host callback declaring int32 or float32 results, `jnp.asarray(0)` compared with an int32):
    the project never runs it so. Checked at the project's precision, float32, with float64 off."""

    def __init__(self, detail):
        super().__init__(detail)
        self.detail = detail


class GuessedShapes(Exception):
    """A rule raised at probed shapes: the guess may be the cause. Tried again at another probed
    rank; a failure only when it raises at every rank tried (at least two)."""

    def __init__(self, name, code, detail):
        super().__init__(detail)
        self.name, self.code, self.detail = name, code, detail


# What an error says when the machine or the device ran out of memory (XLA's compiler under a full
# machine: "LLVM compilation error: Cannot allocate memory"; a device: RESOURCE_EXHAUSTED).
RESOURCE_MARKS = ("MemoryError", "RESOURCE_EXHAUSTED", "Cannot allocate memory", "std::bad_alloc",
                  "Out of memory", "out of memory")


def out_of_resources(text):
    """Whether an error's text (describe_exc's) says the check ran out of memory."""
    return any(mark in (text or "") for mark in RESOURCE_MARKS)


class OutOfResources(BaseException):
    """A check ran out of memory (the machine's or the device's): that says nothing about the rule,
    so the derivative is not checked, and the run goes on. A BaseException, so that no check's
    `except Exception` takes it for the rule's own raise."""

    def __init__(self, detail):
        super().__init__(detail)
        self.detail = detail


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


class GradChecker(Inputs, Modes, N.Numerics, V.Verifier):
    """One custom derivative checked against two references (finite differences and the primal's
    own autodiff), mode by mode; the mixins before the harness's Verifier override its inputs."""

    SHAPES = V.Verifier.SHAPES + ((2,), (2, 2))  # more shapes to probe than the verify harness

    def __init__(self, jax, np, module, plan, x64, live=None, reference=None):
        self.jax, self.np = jax, np
        # Where the references (finite differences, the primal's autodiff) run in float64 when the
        # default device has no float64 (a TPU): a CPU device (vjplint/gradcheck/reference.py).
        self.reference = reference
        self.jnp = importlib.import_module("jax.numpy")
        self.original_module = module
        self.plan, self.params, self.kind = plan, plan["params"], plan["kind"]
        self.checks, self.moved, self.inputs = [], set(), []
        self.x64 = x64
        self.narrow = ""  # set when checked with float64 off: what raised with it on (Narrow)
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
                          and not self.derived_from(i)
                          and self.traceable(args0[i]) and (self.is_real_float(args0[i]) or
                                                            self.is_complex_array(args0[i]))]
        # Complex arrays are differentiated as JAX users do, through a real loss (`grad` of a real
        # function of complex inputs gives the conjugate of the Wirtinger gradient): each is checked
        # as its real and imaginary parts, stacked on a last axis, which every reference and every
        # transform then sees as a real argument.
        self.complex_at = [j for j, i in enumerate(self.positions) if self.is_complex_array(args0[i])]
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
        if self.x64 and not self.narrow:
            try:
                try:
                    return self.run_at(True)
                except Retry:
                    self.checks = []
                return self.run_at(False)
            except Narrow as exc:
                self.checks, self.narrow = [], exc.detail
        with self.precision():
            return self.run_at(False)

    def precision(self):
        """float64 off where the module raises only with it on (Narrow); else as the run set it."""
        return self.jax.enable_x64(False) if self.narrow else contextlib.nullcontext()

    def raises_only_with_x64(self, f, exc):
        """Raise Narrow when `f` raised `exc` with float64 enabled and runs, at the project's own values,
        with it off. Only for inputs the project gave: made-up values do not say how the project runs."""
        if not self.x64 or self.narrow or self.synthetic:
            return
        try:
            with self.jax.enable_x64(False):
                self.jax.block_until_ready(f(*self.given_vals(self.samples[0], lambda v: v)))
        except Exception:
            return
        raise Narrow(describe_exc(exc)) from None

    def run_at(self, wide):
        jax = self.jax
        convert = self.widen if wide else (lambda v: v)
        base = list(self.samples[0])
        self.vals_s = [self.given_vals(s, convert) for s in self.samples]
        self.vals = self.vals_s[0]
        self.F = self.bind(self.fo, base, self.positions)
        self.plain_F = self.bind(self.plain, base, self.positions) if self.plain is not None else None
        derived = {i: self.derived_from(i) for i in range(len(base)) if self.derived_from(i)}
        if derived:
            # Every call of the module computes these from another argument (a QR cache of `A` passed
            # beside `A`): they move with it, recomputed by the module's own function.
            self.F = self.through_derived(self.fo, base, derived)
            if self.plain is not None:
                self.plain_F = self.through_derived(self.plain, base, derived)
        unit = [j for j, i in enumerate(self.positions) if i < len(self.params) and
                self.params[i].get("domain") == "unit"]
        if unit:
            # The module's callers pass these arguments normalised: the derivative is checked as
            # they use it (a rule may hold only on the unit sphere, e.g. a projected cotangent).
            self.F = self.through_normalisation(self.F, unit)
            if self.plain_F is not None:
                self.plain_F = self.through_normalisation(self.plain_F, unit)
        sym = [j for j, i in enumerate(self.positions) if i < len(self.params) and
               self.params[i].get("domain") == "symmetric" and all(
                   self.np.ndim(v[j]) >= 2 and self.np.shape(v[j])[-1] == self.np.shape(v[j])[-2] for v in self.vals_s)]
        read_sym = [j for j in range(len(self.positions)) if j not in sym and self.reads_symmetric_part(j)]
        rule_sym = [j for j in range(len(self.positions)) if j not in sym and j not in read_sym and
                    self.rule_for_symmetric(j)]
        sym += read_sym + rule_sym
        if sym:
            # Every call the module makes passes these symmetrised (`0.5 * (a + a.T)`), and the rule is
            # written for symmetric matrices (eigh's): checked along symmetric directions, as used.
            self.F = self.through_symmetrisation(self.F, sym)
            if self.plain_F is not None:
                self.plain_F = self.through_symmetrisation(self.plain_F, sym)
        skew = [j for j in range(len(self.positions)) if j not in sym and self.all_skew(j)]
        if skew:
            # Every value the project passed is skew-symmetric (a Pfaffian's input): a rule written for
            # such matrices (`tr(A^-1 dA) / 2`) is right along skew-symmetric directions only, as used.
            self.F = self.through_skew(self.F, skew)
            if self.plain_F is not None:
                self.plain_F = self.through_skew(self.plain_F, skew)
        if self.complex_at:
            self.F = self.through_complex(self.F, self.complex_at)
            if self.plain_F is not None:
                self.plain_F = self.through_complex(self.plain_F, self.complex_at)
        shown = list(base)
        for j, (i, v) in enumerate(zip(self.positions, self.vals)):
            shown[i] = self.from_real_pair(v) if j in self.complex_at else v
        self.at = ", ".join("{}={}".format(self.param_name(i), self.summary(shown[i])) for i in range(len(shown)))
        if self.domain_label:
            self.at += " with values {}".format(self.domain_label)
        if self.narrow:
            self.at += " (float64 off, as the project runs it: with it on the module raises {})".format(
                self.narrow[:200])
        declared = [j for j in sym if j not in read_sym and j not in rule_sym]
        if declared:
            self.at += " ({} symmetrised as the module's caller does, line {})".format(
                ", ".join("`{}`".format(self.param_name(self.positions[j])) for j in declared),
                self.params[self.positions[declared[0]]].get("symmetrised", "?"))
        if read_sym:
            self.at += (" ({} along symmetric directions: every value the project passed is symmetric and the "
                        "primal reads only its symmetric part, as `eigh` does)".format(
                            ", ".join("`{}`".format(self.param_name(self.positions[j])) for j in read_sym)))
        if rule_sym:
            self.at += (" ({} along symmetric directions: every value the project passed is symmetric and the rule's "
                        "cotangent for it is symmetric, written for symmetric matrices)".format(
                            ", ".join("`{}`".format(self.param_name(self.positions[j])) for j in rule_sym)))
        if skew:
            self.at += (" ({} along skew-symmetric directions: every value the project passed is skew-symmetric, "
                        "`A.T == -A`)".format(", ".join("`{}`".format(self.param_name(self.positions[j])) for j in skew)))
        if self.complex_at:
            self.at += " ({} complex: differentiated through a real loss, by real and imaginary parts)".format(
                ", ".join("`{}`".format(self.param_name(self.positions[j])) for j in self.complex_at))
        for i, (_, name) in derived.items():
            self.at += " (`{}` computed from `{}` by `{}` as the module's callers do, line {})".format(
                self.param_name(i), self.param_name(self.params[i]["derived"]["from"]), name,
                self.params[i]["derived"].get("line", "?"))
        if unit:
            self.at += " ({} normalised as the module's caller does, `x / norm(x)`)".format(
                ", ".join("`{}`".format(self.names[j] if hasattr(self, "names") else j) for j in unit))
        try:
            self.out_s = [jax.block_until_ready(self.F(*v)) for v in self.vals_s]
        except Exception as exc:
            if wide:
                raise Retry() from None
            self.raises_only_with_x64(self.F, exc)
            unjitted = self.unjitted_primal(base)
            if not self.synthetic and ((self.plain_F is not None and self.runs(self.plain_F, self.vals_s[0])) or (
                    unjitted is not None and self.runs(unjitted, self.vals_s[0]))):
                # At inputs the project gave, the primal without its rule runs: the custom derivative
                # itself (its registration, its nondiff arguments, a `jax.jit` between the creator and
                # the function, which traces what the creator would pass as it is) is what raises.
                detail = ("every call raises {} at {}, where the primal without its rule {}runs (inputs the project "
                          "gave)".format(describe_exc(exc), self.at, "" if unjitted is None else
                                         "and without the `jax.jit` under the creator "))
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
                self.gp = jax.block_until_ready(self.reference_call(self.grad_plain, self.vals))
            except Exception as exc:
                self.ref_error = "raises " + describe_exc(exc)
        self.derived_cut = []
        for k, (source, name) in derived.items():
            try:  # the module's function stops the gradient when its tangent is zero along a random direction
                x = base[source]
                t = jax.jvp(getattr(self.original_module, name), (x,), (self.random_like(x),))[1]
                if all(not self.np.any(self.np.asarray(leaf)) for leaf in jax.tree_util.tree_leaves(t)):
                    self.derived_cut.append((self.param_name(k), self.param_name(source)))
            except Exception:
                pass
        if derived:  # the module's function may stop the gradient (a cache): the primal's autodiff misses the tie
            self.gp, self.grad_plain = None, None
            self.ref_error = "is not a reference where an argument is computed from another by the module's function"
        try:
            self.g_s = [jax.block_until_ready(self.grad(*v)) for v in self.vals_s]
        except Exception as exc:
            if wide:
                try:
                    self.grad(*self.given_vals(self.samples[0], lambda v: v))
                except Exception:
                    pass
                else:
                    raise Retry() from None
            self.raises_only_with_x64(self.grad, exc)
            self.g_s = None
            self.grad_exc = exc
            self.grad_error = "{}{}: {} at {}".format(self.reverse_what(), self.rule_where(exc, "bwd"),
                                                      describe_exc(exc), self.at)
            self.raising_outputs()
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

    def derived_from(self, i):
        """(the argument's position it is computed from, the module's function that computes it) for a
        parameter every call of the module passes as a function of another differentiated argument
        (vjplint.verify.synth._call_site_derived); None otherwise, or when that function is not there."""
        spec = self.params[i].get("derived") if i < len(self.params) else None
        if not spec or spec["from"] >= len(self.params) or self.params[spec["from"]].get("role") == "static":
            return None
        fn = getattr(self.original_module, spec["function"], None)
        return (spec["from"], spec["function"]) if callable(fn) else None

    def through_derived(self, f, base, derived):
        positions = list(self.positions)
        module = self.original_module

        def bound(*values):
            full = list(base)
            for i, v in zip(positions, values):
                full[i] = v
            for k, (source, name) in derived.items():
                full[k] = getattr(module, name)(full[source])
            return f(*full)
        return bound

    def reads_symmetric_part(self, j):
        """Whether every value the project passed for the j-th differentiated argument is a symmetric
        (Hermitian) matrix and the primal reads only its symmetric part (`eigh` symmetrises its input):
        the primal does not change when an antisymmetric matrix is added to it. Such a rule is written
        for symmetric matrices, and its derivative is checked along symmetric directions, as used."""
        np, jnp = self.np, self.jnp
        if not self.all_symmetric(j):
            return False
        try:
            x = self.vals_s[0][j]
            k = self.np.random.default_rng(5).standard_normal(np.shape(x))
            k = (k - np.swapaxes(k, -1, -2)) * 1e-2 * (1 + float(np.max(np.abs(np.asarray(x)))))
            moved = list(self.vals_s[0])
            moved[j] = x + jnp.asarray(k, dtype=x.dtype)
            before = [np.asarray(leaf, dtype=np.float64) for leaf in self.jax.tree_util.tree_leaves(
                self.F(*self.vals_s[0]))]
            after = [np.asarray(leaf, dtype=np.float64) for leaf in self.jax.tree_util.tree_leaves(self.F(*moved))]
        except Exception:
            return False
        tol = 1e-9 if x.dtype == np.float64 else 1e-4
        return bool(before) and len(before) == len(after) and all(
            b.shape == c.shape and np.all(np.isfinite(b)) and np.allclose(b, c, rtol=tol, atol=tol * (1 + float(
                np.max(np.abs(b), initial=0.0)))) for b, c in zip(before, after))

    def all_symmetric(self, j):
        """Whether every value the project passed for the j-th differentiated argument is a real
        symmetric matrix (at least 2 x 2; batched on leading axes)."""
        np, jnp = self.np, self.jnp
        if self.synthetic or j in getattr(self, "complex_at", ()):
            return False
        for v in self.vals_s:
            x = v[j]
            # An array, not a pytree: np.ndim of a tuple of equal vectors would read it as a matrix.
            if not (hasattr(x, "shape") and hasattr(x, "dtype")) or np.ndim(x) < 2 or np.shape(x)[-1] != np.shape(x)[-2] or np.shape(x)[-1] < 2 or \
                    not jnp.issubdtype(x.dtype, jnp.floating):
                return False
            a = np.asarray(x, dtype=np.float64)
            if not np.allclose(a, np.swapaxes(a, -1, -2), rtol=1e-6, atol=1e-7 * (1 + float(np.max(np.abs(a))))):
                return False
        return True

    def rule_for_symmetric(self, j):
        """Whether every value the project passed for the j-th differentiated argument is symmetric
        and the rule's cotangent for it is symmetric too (not zero), under two random output
        cotangents: a rule written for symmetric matrices (OptNet's `dQ = (dx x' + x dx') / 2`,
        where the primal, a solver, reads the whole matrix). It holds along symmetric directions
        only, the ones the project's values move in: checked so. A rule wrong along them still fails."""
        np = self.np
        if not self.all_symmetric(j):
            return False
        try:
            out, pull = self.jax.vjp(self.F, *self.vals_s[0])
            for seed in (0, 1):
                ct = self.jax.tree_util.tree_map(lambda o, seed=seed: self.jnp.asarray(
                    np.random.default_rng(11 + seed).standard_normal(np.shape(o)), dtype=o.dtype), out)
                g = np.asarray(pull(ct)[j], dtype=np.float64)
                scale = float(np.max(np.abs(g), initial=0.0))
                if scale == 0.0 or not np.all(np.isfinite(g)) or not np.allclose(
                        g, np.swapaxes(g, -1, -2), rtol=1e-6, atol=1e-6 * scale):
                    return False
        except Exception:
            return False
        return True

    def all_skew(self, j):
        """Whether every value the project passed for the j-th differentiated argument is a real
        skew-symmetric matrix (`A.T == -A`, not zero; batched on leading axes): the argument's
        derivative is then checked along skew-symmetric directions, the ones its values move in."""
        np, jnp = self.np, self.jnp
        if self.synthetic or j in getattr(self, "complex_at", ()):
            return False
        for v in self.vals_s:
            x = v[j]
            if not (hasattr(x, "shape") and hasattr(x, "dtype")) or np.ndim(x) < 2 or np.shape(x)[-1] != np.shape(x)[-2] or \
                    np.shape(x)[-1] < 2 or not jnp.issubdtype(x.dtype, jnp.floating):
                return False
            a = np.asarray(x, dtype=np.float64)
            scale = float(np.max(np.abs(a), initial=0.0))
            if scale == 0.0 or not np.all(np.isfinite(a)) or not np.allclose(
                    a, -np.swapaxes(a, -1, -2), rtol=1e-6, atol=1e-6 * scale):
                return False
        return True

    def through_skew(self, f, skew):
        jnp = self.jnp

        def composed(*values):
            values = list(values)
            for j in skew:
                values[j] = 0.5 * (values[j] - jnp.swapaxes(values[j], -1, -2))
            return f(*values)
        return composed

    def through_symmetrisation(self, f, sym):
        jnp = self.jnp

        def composed(*values):
            values = list(values)
            for j in sym:
                values[j] = 0.5 * (values[j] + jnp.swapaxes(values[j], -1, -2).conj())
            return f(*values)
        return composed

    def make_weights(self, out):
        """The harness's random real weights, and for a complex output leaf complex ones: the loss
        `re(sum(leaf * w))` then depends on both its real and its imaginary part."""
        weights = super().make_weights(out)
        rng = self.np.random.default_rng(17)
        for k, w in enumerate(weights):
            if w is not None and self.jnp.issubdtype(w.dtype, self.jnp.complexfloating):
                weights[k] = w + 1j * self.jnp.asarray(rng.uniform(0.5, 1.5, self.np.shape(w)), dtype=w.dtype)
        return weights

    def loss(self, out):
        """The harness's random linear functional; after phase_retry, `|leaf|^2` for complex leaves."""
        if not getattr(self, "phase_invariant", False):
            return super().loss(out)
        jnp = self.jnp
        leaves = self.jax.tree_util.tree_leaves(out)
        if len(leaves) != len(self.weights):
            raise ValueError("the output has {} leaves, the original's has {}".format(len(leaves), len(self.weights)))
        total = 0.0
        for leaf, w in zip(leaves, self.weights):
            if w is None:
                continue
            if jnp.issubdtype(w.dtype, jnp.complexfloating):
                total = total + jnp.sum(jnp.real(w) * jnp.abs(leaf) ** 2)
            else:
                total = total + jnp.real(jnp.sum(leaf * w))
        return total

    def unjitted_primal(self, base):
        """The primal as the Python function under a `jax.jit` that the creator decorates (what jit
        returns has `lower` and `__wrapped__`), bound like self.F; None when the primal is not jitted."""
        plain = self.plain
        if plain is None or not hasattr(plain, "lower") or getattr(plain, "__wrapped__", None) is None:
            return None
        f = self.bind(plain.__wrapped__, base, self.positions)
        return self.through_complex(f, self.complex_at) if self.complex_at else f

    def given_vals(self, sample, convert):
        """The differentiated values of one sample as the checks take them: JAX arrays, complex
        ones as real (re, im) pairs on a last axis, then `convert`ed (widened)."""
        complex_at = getattr(self, "complex_at", ())
        return [convert(self.to_real_pair(v) if j in complex_at else v) for j, v in enumerate(
            self.as_jax_arrays(sample[i]) for i in self.positions)]

    def is_complex_array(self, value):
        dtype = getattr(value, "dtype", None)
        return dtype is not None and hasattr(value, "shape") and self.jnp.issubdtype(dtype, self.jnp.complexfloating)

    def to_real_pair(self, value):
        jnp = self.jnp
        value = jnp.asarray(value)
        return jnp.stack([jnp.real(value), jnp.imag(value)], axis=-1)

    def from_real_pair(self, value):
        return self.jax.lax.complex(value[..., 0], value[..., 1])

    def through_complex(self, f, complex_at):
        def composed(*values):
            values = list(values)
            for j in complex_at:
                values[j] = self.from_real_pair(values[j])
            return f(*values)
        return composed

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
        if status in ("failed", "unverifiable") and out_of_resources(detail):
            raise OutOfResources(detail)  # the machine's trouble, not the rule's
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
        if out_of_resources(detail):  # before anything else: the machine's trouble, not the rule's
            raise OutOfResources(detail)
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
        if self.prec == "float64" and finite_ad and finite_fd and err_fd <= (1e-2 if order == 2 else 1e-3) and \
                self.given_in_float32():
            # The project computes in float32: a rule that agrees to 1e-3 (a quadrature, a difference
            # quotient inside the rule, a solver's relaxed point: qpax's 1.45e-4) is as right as float32
            # can tell (check-grads' own float32 tolerance is 0.03); float64 is the checks' own.
            self.record(name, "passed", "agrees within float32 accuracy, the precision of every value the project "
                        "passed: max rel. error {} against float64 finite differences (float64 tolerance {:g})".format(
                            self.num(err_fd), rtol), max_error=err_fd)
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
        if order == 2 and not finite_ad and ref is not None and not finite_ref:
            # The where-NaN pattern, the primal's own: `where(x * x <= 1, sqrt(1 - x * x), 0)` past 1
            # differentiates to NaN through the branch not taken, with the rule and without it alike.
            self.record(name, "failed", "{} may be wrong: it is NaN or inf {}, where finite differences are finite, "
                        "and the primal's own autodiff is NaN or inf there too (a `jnp.where` whose other branch is "
                        "not finite, e.g. `sqrt` of a negative number, differentiates to NaN): the {} keeps what "
                        "differentiating the primal gives, and a caller taking second derivatives there gets "
                        "NaN".format(what, where, rule), code, err_fd, "warning")
            return False
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

    def given_in_float32(self):
        """Whether every differentiated value the project gave (recorded, an example, a call site: none
        made up) is float32 or narrower, Python numbers aside (JAX's default float32), at least one
        an array."""
        if self.synthetic or not getattr(self, "samples", None):
            return False
        arrays = 0
        for i in self.positions:
            for leaf in self.jax.tree_util.tree_leaves(self.samples[0][i]):
                if isinstance(leaf, float):
                    continue
                if self.dtype_of(leaf) not in ("float32", "float16", "bfloat16"):
                    return False
                arrays += 1
        return arrays > 0

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
        try:
            here = float(self.L(*self.vals))
        except Exception:
            return False
        # A step of 0.37 may not cross the primal's next jump (a Heaviside step at -0.44 and -0.55):
        # steps of growing size either way; a step past a jump counts when the primal's own
        # derivative is zero there too (piecewise constant: a relu moved past its kink is not).
        for step in (0.37, -0.37, 1.0, -1.0, 3.0, -3.0):
            moved = list(self.vals)
            moved[j] = self.jax.tree_util.tree_map(lambda x: x + step, moved[j])
            try:
                if abs(float(self.L(*moved)) - here) <= 1e-6:
                    continue
            except Exception:
                return False
            if step == 0.37:
                return True  # the first step, as before: its value moved
            if self.grad_plain is None:
                return False
            try:
                flat_there = self.flat(self.jax.block_until_ready(self.reference_call(self.grad_plain, moved))[j])
            except Exception:
                return False
            return bool(np.all(np.isfinite(flat_there))) and float(np.max(np.abs(flat_there), initial=0.0)) <= atol
        return False

    def scalar_beside_arrays(self, j):
        np = self.np
        ndim = [max([np.ndim(x) for x in self.jax.tree_util.tree_leaves(v)] or [0]) for v in self.vals]
        return ndim[j] == 0 and any(n > 0 for k, n in enumerate(ndim) if k != j)

    def none_slots(self):
        """Indices (into self.positions) of the differentiated arguments for which the bwd rule
        returns a literal None, found by calling fwd and bwd directly at the first inputs; for a
        custom_jvp, those whose tangent the jvp rule discards (discarded_slots)."""
        if self.kind == "jvp":
            return self.discarded_slots()
        if self.kind != "vjp":
            return set()
        jax = self.jax
        fwd, bwd = getattr(self.fo, "fwd", None), getattr(self.fo, "bwd", None)
        nondiff = tuple(getattr(self.fo, "nondiff_argnums", ()) or ())
        if fwd is None or bwd is None or getattr(self.fo, "symbolic_zeros", False):
            return set()
        args = list(self.samples[0])
        for j, (i, v) in enumerate(zip(self.positions, self.vals)):
            args[i] = self.from_real_pair(v) if j in self.complex_at else v
        try:
            out, res = fwd(*args)
            cts = bwd(*[args[i] for i in nondiff], res, jax.tree_util.tree_map(self.unit_cotangent, out))
        except Exception:
            return set()
        if not isinstance(cts, (tuple, list)):
            return set()
        diff = [i for i in range(len(args)) if i not in nondiff]
        # An explicit zero cotangent (`jnp.zeros_like(teacher)`: a distillation loss's detached
        # teacher) says the same as None when it is zero under another, random cotangent too.
        zeros = [k for k, i in enumerate(diff) if k < len(cts) and i in self.positions and self.all_zero(cts[k])]
        if zeros:
            np, rng = self.np, self.np.random.default_rng(7)  # not self.rng: the checks' draws stay as they were
            try:
                other = jax.tree_util.tree_map(lambda o: self.jnp.asarray(rng.uniform(0.5, 1.5, np.shape(o)), dtype=o.dtype)
                                               if self.is_real_float(o) else self.unit_cotangent(o), out)
                again = bwd(*[args[i] for i in nondiff], res, other)
                zeros = [k for k in zeros if isinstance(again, (tuple, list)) and k < len(again) and
                         self.all_zero(again[k])]
            except Exception:
                zeros = []
        self.zero_slots = {self.positions.index(diff[k]) for k in zeros}
        return {self.positions.index(i) for k, i in enumerate(diff)
                if k < len(cts) and cts[k] is None and i in self.positions} | self.zero_slots

    def all_zero(self, tree):
        """Whether a cotangent is floating-point zeros only (not None, not empty)."""
        leaves = self.jax.tree_util.tree_leaves(tree)
        try:
            return bool(leaves) and all(self.is_real_float(x) and self.np.size(x) > 0 and
                                        not self.np.any(self.np.asarray(x)) for x in leaves)
        except Exception:
            return False

    def raising_outputs(self):
        """Reverse mode raises for a random function of the whole output: when it raises only for
        functions of some of the output's leaves (a jvp rule whose tangent for an error estimate is
        not linear: quadax's romberg gives `info.err` an `abs`, whose transpose JAX lacks), those
        leaves are left out of the loss, noted as a "may" (right as long as no caller differentiates
        them), and the rest is compared as usual. Nothing changes when every leaf raises."""
        jax = self.jax
        full = list(self.weights)
        floats = [k for k, w in enumerate(full) if w is not None]
        if len(floats) < 2:
            return
        bad = []
        for k in floats:
            self.weights = [w if j == k else None for j, w in enumerate(full)]
            try:
                jax.block_until_ready(self.grad(*self.vals_s[0]))
            except Exception:
                bad.append(k)
        self.weights = [None if j in bad else w for j, w in enumerate(full)]
        try:
            if not bad or len(bad) == len(floats):
                raise ValueError
            g_s = [jax.block_until_ready(self.grad(*v)) for v in self.vals_s]
        except Exception:
            self.weights = full
            return
        self.g_s = g_s
        if self.grad_plain is not None:
            try:
                self.gp = jax.block_until_ready(self.reference_call(self.grad_plain, self.vals))
                self.ref_error = ""
            except Exception as exc:
                self.gp, self.ref_error = None, "raises " + describe_exc(exc)
        paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(self.out)[0]]
        names = ", ".join("`output{}`".format(paths[k]) for k in bad)
        self.record("reverse order 1", "failed", "{}; only for a function of {}: may be wrong there, right as long "
                    "as no caller differentiates {}; the other outputs were compared".format(
                        self.grad_error, names, names), self.rev_code, severity="warning")

    def unit_cotangent(self, out):
        """A cotangent of ones for a floating-point output; for an integer or boolean one (a step
        counter a while_loop carries), float0 zeros, as JAX gives its bwd (ones there make a bwd that
        differentiates through the carry raise, and its Nones would go unseen: fdtdx's time step)."""
        jnp = self.jnp
        value = jnp.asarray(out)
        if jnp.issubdtype(value.dtype, jnp.inexact):
            return jnp.ones_like(value)
        return self.np.zeros(value.shape, self.jax.dtypes.float0)

    def discarded_slots(self):
        """Indices (into self.positions) of the differentiated arguments whose tangent the jvp
        rule discards (`x_dot, _ = tangents`, a zero for that input): with random tangents for that
        argument alone, the others zero, the rule's tangent output is exactly zero, twice, and with
        every tangent at once it is what the others alone give (a product `dx * dy` is not). The jvp
        form of a bwd `None`; whether the primal depends on the argument is for the references to
        say (the caller compares them). Cached for the inputs in use; its own random draws, so the
        other checks' directions stay as they were."""
        cached = getattr(self, "_discarded", None)
        if cached is not None and cached[0] is self.vals:
            return cached[1]
        jax, np = self.jax, self.np
        saved, self.rng = self.rng, np.random.default_rng(23)
        found = set()
        try:
            for j in range(len(self.vals)):
                zero = [jax.tree_util.tree_map(self.jnp.zeros_like, v) for v in self.vals]
                discarded = True
                for _ in range(2):
                    t = list(zero)
                    t[j] = self.random_like(self.vals[j])
                    if not any(np.any(np.asarray(x) != 0) for x in jax.tree_util.tree_leaves(t[j])):
                        discarded = False
                        break
                    try:
                        ty = jax.block_until_ready(jax.jvp(self.F, tuple(self.vals), tuple(t))[1])
                    except Exception:
                        discarded = False
                        break
                    # float0 tangents (of integer outputs: an integrator's status and counts) are no values
                    leaves = [x for x in jax.tree_util.tree_leaves(ty) if np.asarray(x).dtype.kind != "V"]
                    if not leaves or any(np.any(np.asarray(x) != 0) for x in leaves):
                        discarded = False
                        break
                if discarded:
                    found.add(j)
            if found:  # and with every tangent at once, the discarded ones add nothing (not `dx * dy`)
                t = [self.random_like(v) for v in self.vals]
                kept = [jax.tree_util.tree_map(self.jnp.zeros_like, v) if j in found else v for j, v in enumerate(t)]
                try:
                    both = [[x for x in jax.tree_util.tree_leaves(jax.block_until_ready(jax.jvp(
                        self.F, tuple(self.vals), tuple(u))[1])) if np.asarray(x).dtype.kind != "V"] for u in (t, kept)]
                    if len(both[0]) != len(both[1]) or any(np.any(np.asarray(a) != np.asarray(b))
                                                           for a, b in zip(*both)):
                        found = set()
                except Exception:
                    found = set()
        finally:
            self.rng = saved
        self._discarded = (self.vals, found)
        return found

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

