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

Its parts, loaded by their paths (vjplint need not be importable here): process.py (events, the
module loader, the chip lock), verifier.py (inputs and the residual-plus-None checks); here, the
driver's and the other fixes' verifiers, and `main`.
"""

import importlib
import importlib.util
import inspect
import json
import os
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
Unverifiable, describe_exc, rehome, rehoming, resolve = P.Unverifiable, P.describe_exc, P.rehome, P.rehoming, P.resolve
BATCH, Verifier = V.BATCH, V.Verifier


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


def main(argv):
    request_path, result_path = argv[1], argv[2]
    P.exit_with_parent()
    emit = P.Emitter(result_path)
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
    chip = P.hold_the_chip(emit)  # noqa: F841 (held until this process exits)
    device = jax.devices()[0]
    label = "cpu" if device.platform == "cpu" else str(device)
    emit(event="start", device=label, device_kind=getattr(device, "device_kind", ""), jax_version=jax.__version__,
         python=sys.version.split()[0])
    P.import_package_first(request["module_name"])
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
                sys.modules[other["module_name"]] = P.load_module(other["module_name"], other["path"], other[key])
                P.set_in_package(other["module_name"], sys.modules[other["module_name"]])
            modules[which] = P.load_module(request["module_name"], request["path"], request[key])
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from user code included
            if which == "original" and rewrites_only:
                where = P._user_frame(exc, request["path"])
                original_error = describe_exc(exc) + (" (at {})".format(where) if where else "")
                modules["original"] = None
                continue
            emit(event="import-error", which=which, detail=describe_exc(exc),
                 where=P._user_frame(exc, request["path"]))
            return 0
        finally:
            for name, previous in saved.items():
                if previous is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = previous
                P.set_in_package(name, previous)
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





if __name__ == "__main__":
    sys.exit(main(sys.argv))
