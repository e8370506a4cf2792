"""The check-grads child's checks, mode by mode (a mixin of GradChecker, loaded by its path; never
imported by vjplint): reverse mode against finite differences (orders 1 and 2), forward mode for a
custom_jvp, the rule's primal output against the primal's, eager against jit and vmap (the value
and the gradient), and the nondiff_argnums arguments traced.
"""

import importlib.util
import os
import sys


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
N = _load("gradcheck", "numerics")
describe_exc = P.describe_exc
FD, SAME = N.FD, N.SAME

class Modes:
    """The checks GradChecker.run_at runs, each recording its outcome (GradChecker.record, .fail, .judge)."""

    # -- reverse mode ---------------------------------------------------------------------------
    def reverse(self):
        if self.g_s is None:
            self.fail("reverse order 1", self.rev_code, self.grad_error, raised=True, control=self.gp is not None,
                      exc=getattr(self, "grad_exc", None))
            return
        jax = self.jax
        g = self.g_s[0]
        if self.narrowed_gradient(g) or self.raises_alone():
            return
        if self.ignored_outputs():
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
                if self.phase_retry(last):
                    return self.reverse()
                if j not in nones and last["status"] == "failed" and last.get("severity") != "warning" and \
                        self.zero_for_number(j, ads[0]):
                    last.update(status="noted", severity="info", detail=(
                        "not compared with the true gradient: the {} a zero for `{}`, a Python number the project "
                        "passes beside array arguments (a hyperparameter it declares constant)".format(
                            "bwd rule returns" if self.kind == "vjp" else "jvp rule gives", name)))
                    declared.append(self.checks.pop())
                    continue
                if j in nones and last["status"] == "unverifiable":
                    # The rule says "not differentiated" for this argument, and the references cannot
                    # decide there (finite differences moving it are NaN: a host function's nondiff
                    # exponent): nothing to compare for it, and no reason to leave the others unchecked.
                    last.update(status="skipped", detail=(
                        "not compared for `{}`: the {} (it declares `{}` not differentiated), and the references "
                        "do not decide there: {}".format(
                            name, "bwd rule returns None for it" if self.kind == "vjp" else
                            "jvp rule discards its tangent", name, last["detail"])))
                    declared.append(self.checks.pop())
                    continue
                if j not in nones or last["status"] != "failed" or last.get("severity") == "warning":
                    self.checks[-1:-1] = declared
                    return
                # `None` is the rule saying "not differentiated here": compare the others. For a scalar
                # beside array arguments (a temperature, a smoothing weight) it is noted; otherwise unsure.
                if self.scalar_beside_arrays(j):
                    last.update(status="noted", severity="info", detail=(
                        "not compared with the true gradient: the {} `{}`, a scalar beside array arguments (a "
                        "hyperparameter it declares constant)".format(
                            ("bwd rule returns zeros for" if j in getattr(self, "zero_slots", ()) else
                             "bwd rule returns None for") if self.kind == "vjp" else "jvp rule discards the tangent of",
                            name)))
                    declared.append(self.checks.pop())
                    continue
                last["severity"] = "warning"
                how = ("the bwd rule returns zeros for it (`zeros_like`, under every cotangent tried" if j in
                       getattr(self, "zero_slots", ()) else "the bwd rule returns None for it (a zero cotangent") \
                    if self.kind == "vjp" else \
                    "the jvp rule discards its tangent (a zero contribution, like a bwd None"
                last["detail"] = ("{} may be wrong: {}: it declares `{}` not differentiated), right only if no caller "
                                  "differentiates `{}`; it {}; the other arguments were compared".format(
                                      what, how, name, name, last["detail"][len(what) + 1:]))
                declared.append(self.checks.pop())
                continue
            self.checks.pop()  # one record for all arguments
        if any(c["status"] == "failed" for c in declared):
            self.checks.extend(declared)
            return
        if getattr(self, "phase_invariant", False):
            self.record("reverse order 1", "passed", "compared through `|output|^2` of the complex outputs: with a "
                        "loss linear in them it differed from finite differences ({}), which follow the phase the "
                        "solver picks, a phase the primal does not fix".format(
                            self.first_mismatch["detail"].split(" at ")[0]))
        else:
            self.record("reverse order 1", "passed")
        self.checks.extend(declared)
        u = [self.random_like(v) for v in self.vals]

        def directional(grad):
            def hvp_scalar(*v):
                gv = grad(*v)
                return sum(self.jnp.sum(a * b) for a, b in zip(jax.tree_util.tree_leaves(gv),
                                                                 jax.tree_util.tree_leaves(u)))
            return hvp_scalar
        if self.order_2_cut("reverse order 2"):
            return
        hvp_scalar = directional(self.grad)
        try:
            g2 = jax.block_until_ready(jax.grad(hvp_scalar, argnums=self.argnums)(*self.vals))
        except Exception as exc:
            self.record("reverse order 2", "skipped", "grad of grad raises: " + describe_exc(exc))
            return
        ref2 = None
        if self.grad_plain is not None and self.gp is not None:
            try:
                ref2 = jax.block_until_ready(self.reference_call(
                    jax.grad(directional(self.grad_plain), argnums=self.argnums), self.vals))
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

    def order_2_cut(self, name):
        """An argument computed from another by a module function that stops the gradient (a QR
        cache under `stop_gradient`): the tie holds to first order only, so the rule's second
        derivative cannot be compared along it. True when skipped (recorded)."""
        cut = getattr(self, "derived_cut", None)
        if not cut:
            return False
        self.record(name, "skipped", "{} computed from {} by a function of the module that stops the gradient, so "
                    "the rule's own second derivative misses its dependence (a first-order tie)".format(
                        ", ".join("`{}`".format(a) for a, _ in cut), ", ".join("`{}`".format(b) for _, b in cut)))
        return True

    def zero_for_number(self, j, ad):
        """The rule's gradient for argument j is exactly zero, the argument is a Python number in
        every sample the project gave (`z_loss_scale=0.05`), and it is a scalar beside arrays."""
        np = self.np
        i = self.positions[j]
        if any(type(s[i]) not in (float, int) for s in self.samples) or str(self.inputs[i].get("source", "") if i < len(
                self.inputs) else "").startswith("assumed"):
            return False
        return ad.size > 0 and bool(np.all(ad == 0)) and self.scalar_beside_arrays(j)

    def ignored_outputs(self):
        """Output leaves whose cotangent the rule ignores (axlearn's cross entropy returns the loss and
        two parts of it for logging; its bwd keeps `g[0]`): for a function of one such leaf alone the
        rule's gradient is exactly zero where the primal's own is not. When some leaves are ignored
        and not all, they are left out of the loss, noted as a "may" (right as long as no caller
        differentiates them), and the rest is compared as usual. True when it left some out."""
        jax, np = self.jax, self.np
        full = list(self.weights)
        floats = [k for k, w in enumerate(full) if w is not None]
        if len(floats) < 2 or len(floats) > 8 or self.grad_plain is None:
            return False
        ignored = []
        try:
            for k in floats:
                self.weights = [w if m == k else None for m, w in enumerate(full)]
                mine = jax.tree_util.tree_leaves(jax.block_until_ready(self.grad(*self.vals)))
                if any(np.any(np.asarray(x) != 0) for x in mine):
                    continue
                theirs = jax.tree_util.tree_leaves(jax.block_until_ready(
                    self.reference_call(self.grad_plain, self.vals)))
                if any(np.any(np.abs(np.asarray(x, dtype=np.float64)) > FD[self.prec][2]) for x in theirs):
                    ignored.append(k)
            if not ignored or len(ignored) == len(floats):
                raise ValueError
            self.weights = [None if m in ignored else w for m, w in enumerate(full)]
            g_s = [jax.block_until_ready(self.grad(*v)) for v in self.vals_s]
            gp = jax.block_until_ready(self.reference_call(self.grad_plain, self.vals)) if self.gp is not None \
                else None
        except Exception:
            self.weights = full
            return False
        self.g_s, self.gp = g_s, gp
        paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(self.out)[0]]
        names = ", ".join("`output{}`".format(paths[k]) for k in ignored)
        self.record("reverse order 1", "failed", "{} may be wrong for a function of {}: the {} ignores {} cotangent "
                    "(its gradient is zero where the primal's own is not), right as long as no caller "
                    "differentiates {}; the other outputs were compared, at {}".format(
                        "bwd cotangents" if self.kind == "vjp" else "gradients", names,
                        "bwd rule" if self.kind == "vjp" else "transpose of the jvp rule",
                        "their" if len(ignored) > 1 else "its", names, self.at), self.rev_code, severity="warning")
        return True

    def raises_alone(self):
        """A custom_jvp differentiated with respect to one argument at a time, the others closed
        over as constants, as a caller that differentiates fewer arguments does: JAX then hands the
        jvp rule a zero tangent for the others (a `SymbolicZero` object with `symbolic_zeros=True`,
        which arithmetic and `jnp` functions reject). With every argument differentiated at once
        the rule sees arrays only. True when it raised (recorded as a failure)."""
        if self.kind != "jvp" or len(self.positions) < 2:
            return False
        jax = self.jax
        for j, name in enumerate(self.names):
            def alone(v, j=j):
                vals = list(self.vals)
                vals[j] = v
                return self.L(*vals)
            try:
                jax.block_until_ready(jax.grad(alone)(self.vals[j]))
            except Exception as exc:
                self.fail("reverse order 1", self.rev_code, "{} when only `{}` is differentiated (the other "
                          "arguments constant, as a caller that differentiates fewer passes them{}): {} at {}".format(
                              self.reverse_what(), name, "; the rule gets symbolic zeros for their tangents"
                              if getattr(self.fo, "symbolic_zeros", False) else "", describe_exc(exc), self.at),
                          raised=True, control=self.gp is not None, exc=exc)
                return True
        return False

    def phase_retry(self, last):
        """A complex output whose phase the primal does not fix (an eigenvector: any e^{i phi} v is one)
        makes a loss linear in it depend on that arbitrary phase, and finite differences follow
        whatever phase the solver picks: with no second reference (the primal's own autodiff raises),
        a mismatch is checked again with a loss that does not see the phase, `|leaf|^2` of each
        complex output leaf (the rule is then compared on what the phase cannot change). Once."""
        if getattr(self, "phase_invariant", False) or self.gp is not None or last["status"] != "failed" or \
                last.get("severity") == "warning":
            return False
        if not any(w is not None and self.jnp.issubdtype(w.dtype, self.jnp.complexfloating) for w in self.weights):
            return False
        self.phase_invariant = True
        try:
            g_s = [self.jax.block_until_ready(self.grad(*v)) for v in self.vals_s]
        except Exception:
            self.phase_invariant = False
            return False
        self.first_mismatch, self.g_s = self.checks.pop(), g_s
        return True

    def narrowed_gradient(self, g):
        """The rule's gradient for an argument comes back in a floating-point dtype narrower than the
        one the project passes it in (a bwd casting its cotangent to bfloat16 for a float32 input):
        JAX passes the rule's dtype through, so every gradient of it silently loses precision, within
        the float32 tolerances. Compared with the project's own dtype, not the float64 the checks
        widen to. A failure when the primal's own autodiff keeps the dtype."""
        jax, np = self.jax, self.np
        for j, name in enumerate(self.names):
            given = self.samples[0][self.positions[j]]
            ran = jax.tree_util.tree_leaves(self.vals[j])
            pairs = list(zip(jax.tree_util.tree_leaves(given), jax.tree_util.tree_leaves(g[j])))
            for k, (x, gx) in enumerate(pairs):
                # A Python number has no dtype of its own: JAX gives it its default one (weakly typed),
                # float32 unless the project turns float64 on; a float32 cotangent for it is what JAX gives.
                want = np.dtype(np.float32) if type(x) in (float, int) else np.dtype(getattr(x, "dtype", type(x)))
                got = np.dtype(getattr(gx, "dtype", type(gx)))
                if not (self.jnp.issubdtype(want, self.jnp.floating) and self.jnp.issubdtype(got, self.jnp.floating)):
                    continue
                if self.jnp.finfo(got).bits >= self.jnp.finfo(want).bits:
                    continue
                try:
                    if not np.any(np.asarray(gx)):
                        continue  # a zero cotangent cast narrower (fax's bfloat16 zeros) loses nothing
                except Exception:
                    pass
                # The rule ran on inputs no wider than its gradient: a device without float64 (a TPU)
                # runs a float64 input at float32, and the primal's own autodiff there does the same.
                fed = np.dtype(getattr(ran[k], "dtype", want)) if len(ran) == len(pairs) else want
                if self.jnp.issubdtype(fed, self.jnp.floating) and self.jnp.finfo(got).bits >= self.jnp.finfo(fed).bits:
                    continue
                ref = jax.tree_util.tree_leaves(self.gp[j])[k] if self.gp is not None else None
                if ref is not None and self.jnp.finfo(np.dtype(ref.dtype)).bits < self.jnp.finfo(want).bits:
                    continue  # the primal's own autodiff narrows it too
                what = "bwd cotangent" if self.kind == "vjp" else "gradient (reverse mode, JAX's transpose of the " \
                    "jvp rule)"
                self.record("reverse order 1", "failed", "{} for `{}` comes back as {} where the project passes `{}` "
                            "as {}: JAX keeps the rule's dtype, so the gradient silently loses precision (the "
                            "primal's own autodiff does not narrow it), at {}".format(
                                what, name, got.name, name, want.name, self.at), self.rev_code)
                return True
        return False

    # -- forward mode ---------------------------------------------------------------------------
    def forward(self):
        if self.kind == "vjp":
            self.record("forward", "skipped", "a custom_vjp has no forward-mode rule")
            return
        jax = self.jax
        t = [self.random_like(v) for v in self.vals]
        for j in self.none_slots():  # a discarded tangent: compared in reverse mode ("may", as a bwd None)
            t[j] = jax.tree_util.tree_map(self.jnp.zeros_like, t[j])
        ref, ref2 = None, None
        # The floating-point outputs only: an integer output's tangent is float0 (no values), and its
        # finite difference no derivative (an integrator's status and counts beside its value).
        kept = [k for k, x in enumerate(jax.tree_util.tree_leaves(self.out)) if self.is_real_float(x) or
                self.is_complex_array(x)]
        n_out = len(jax.tree_util.tree_leaves(self.out))

        def floats(tree):
            leaves = jax.tree_util.tree_leaves(tree)
            return [leaves[k] for k in kept] if len(leaves) == n_out and len(kept) < n_out else tree
        if self.plain_F is not None:
            try:
                ref = self.flat(floats(jax.block_until_ready(jax.jvp(self.plain_F, tuple(self.vals), tuple(t))[1])))
            except Exception:
                ref = None
        try:
            y, ty = jax.block_until_ready(jax.jvp(self.F, tuple(self.vals), tuple(t)))
            _, ty2 = jax.block_until_ready(jax.jvp(self.F, tuple(self.vals), tuple(self.scale(v, 2.0) for v in t)))
            ty, ty2 = floats(ty), floats(ty2)
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
        fd = self.flat(floats(self.fd_directional(self.fast(self.F), t)))
        ad = self.flat(ty)
        if not self.judge("forward order 1", "VJP502", "jvp tangent (along a random tangent)", fd, ad, ref, 1):
            return

        def tangent_of(f):
            # The tangents at the primals' dtype: the finite differences of this function run on
            # the reference device in float64 where the default device has none (a TPU).
            return lambda *v: floats(jax.jvp(f, tuple(v), tuple(self.cast_like(t, v)))[1])
        if self.order_2_cut("forward order 2"):
            return
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
            self.held_numbers("jit(grad)", stacked, self.g_s[0])
            # Differentiated from outside a jit (a jitted model under a training step's grad): fwd runs
            # under jit's trace and bwd in the transpose's, so residuals kept outside the pair (a
            # module-level dict) escape here, not under jit(grad), where both run in one trace.
            plain = self.plain_F
            self.transform("grad(jit)", "the gradient", lambda: self.grad_of_jit(self.F)(*self.vals), self.g_s[0],
                           (lambda: self.grad_of_jit(plain)(*self.vals)) if gp is not None else None)
            self.held_numbers("grad(jit)", stacked, self.g_s[0])
        if vmap_ok:
            self.transform("vmap(grad)", "the gradient", lambda: jax.vmap(self.grad)(*stacked), g_b,
                           (lambda: jax.vmap(gp)(*stacked)) if gp is not None else None)
            self.held_numbers("vmap(grad)", stacked, g_b)

    def grad_of_jit(self, f):
        """jax.grad of the loss of `jax.jit(f)`: the jit inside the differentiation."""
        jitted = self.jax.jit(f)
        return self.jax.grad(lambda *v: self.loss(jitted(*v)), argnums=self.argnums)

    def held_numbers(self, name, stacked, expected):
        """A rule that raises under jit(grad) or vmap(grad) only because an argument the project
        passes as a Python number (`tol=1e-6`: recorded or given as a number, not an array) is traced
        there (`max(tol, 1e-30)` on a tracer): tried again with those numbers held constant, as jit
        and vmap hold a literal; when it then agrees with eager, the failure becomes a "may"
        warning (right as long as no caller traces them; nondiff_argnums says so)."""
        last = self.checks[-1] if self.checks else None
        if not last or last["name"] != name or last["status"] != "failed" or not last["detail"].startswith(
                "raises under"):
            return
        numbers = [j for j, i in enumerate(self.positions) if i < len(self.samples[0]) and
                   type(self.samples[0][i]) in (float, int) and not str(self.inputs[i].get("source", "") if i < len(
                       self.inputs) else "").startswith("assumed")]
        if not numbers or len(numbers) == len(self.positions):
            return
        jax = self.jax
        if name in ("jit(grad)", "grad(jit)"):
            # grad(jit): jit's linearization traces every argument of a custom derivative, Python numbers
            # included, so nothing holds them constant there: what says the raise is theirs alone is
            # jit(grad) with them static agreeing with eager.
            def run():
                return jax.jit(self.grad, static_argnums=tuple(numbers))(*self.vals)
        else:
            if any(len({repr(v[j]) for v in self.vals_s}) != 1 for j in numbers):
                return  # the calls pass other numbers: nothing to hold constant across the batch
            axes = tuple(None if j in numbers else 0 for j in range(len(self.positions)))
            args = [self.vals[j] if j in numbers else stacked[j] for j in range(len(self.positions))]

            def run():
                return jax.vmap(self.grad, in_axes=axes)(*args)
        try:
            actual = jax.block_until_ready(run())
        except Exception:
            return
        if self.structure_problem(actual, expected) or not self.same(actual, expected, SAME[self.prec])[0]:
            return
        held = ", ".join("`{}`".format(self.names[j]) for j in numbers)
        last["severity"] = "warning"
        if name == "grad(jit)":
            last["detail"] = ("{} is traced under grad(jit): the rule {}; jit's linearization traces every argument "
                              "of a custom derivative, Python numbers included, so a caller that differentiates a "
                              "jitted function calling it gets this error; held constant (jit(grad) with {} static) "
                              "the gradient agrees with eager; nondiff_argnums would hold {} constant everywhere".format(
                                  held, last["detail"], held, held))
            return
        last["detail"] = ("{} may be traced by a caller: the rule {}; the project passes {} as a Python number, which "
                          "{} holds constant, and so held the gradient agrees with eager: right only as long as no "
                          "caller traces {} (nondiff_argnums would say so)".format(
                              held, last["detail"], held, name.split("(")[0], held))

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
            G = self.through_complex(self.bind(self.fo, base, positions), self.complex_at)
            Gp = self.through_complex(self.bind(self.plain, base, positions), self.complex_at) \
                if self.plain is not None else None
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
                    if name == "vmap" and not self.synthetic:
                        # The primal's own code cannot be batched (a `pure_callback` without `vmap_method`):
                        # not the rule's fault, but every caller that vmaps the custom derivative gets it.
                        self.record(name, "failed", "raises under vmap{}: {} at {} (a batch of {}); the primal "
                                    "without its rule raises there too ({}), so its own code, not the rule, cannot "
                                    "be batched: a caller that vmaps it gets this error".format(
                                        self.rule_where(exc, "fwd"), describe_exc(exc), self.at, len(self.vals_s),
                                        type(control_exc).__name__), "VJP504", severity="warning")
                        return False
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

