"""The module's own callers (issue #35), checked by the check-grads child (loaded by its path;
never imported by vjplint): a rule that is right in isolation may still be used wrongly, or
reached by a transform it does not support, by the functions that call it; and arguments the
callers always pass as constants.
"""

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
describe_exc = P.describe_exc
DOMAINS = _load("gradcheck", "checker").DOMAINS

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


def rule_frame(fo, exc):
    """"bwd rule `name` (line N)" when the exception's traceback passes through one of the custom
    derivative's own rules (its fwd, bwd or jvp, by code object), innermost first; else ""."""
    codes = {}
    for which in ("jvp", "fwd", "bwd"):
        code = getattr(getattr(fo, which, None), "__code__", None)
        if code is not None:
            codes[(code.co_filename, code.co_name, code.co_firstlineno)] = which
    if not codes:
        return ""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        for (filename, name, first), which in codes.items():
            if frame.filename == filename and frame.name == name and isinstance(frame.lineno, int) and \
                    frame.lineno >= first:
                return "{} rule `{}` (line {})".format(which, name, frame.lineno)
    return ""


def check_callers(checker, module, result, callers, only_grad=False):
    """Run each module-level caller of the derivative eagerly, under jit and under grad, and
    compare its gradient with finite differences of the caller. A caller the project's run called
    (`plan["caller_args"]`, recorded by vjplint.record) runs at the arguments the run passed it (a
    caller taking only `*args` at the previous one's); any other one at the inputs made for the
    derivative, when it takes them (caller_slots). Only where the derivative's own checks passed,
    except that callers run at recorded arguments are also tried, for what JAX raises in them,
    where the derivative's checks found something (a "may" or a failure of its own): a caller
    that raises under a transform where eager works, or whose gradient disagrees with finite
    differences, uses the derivative wrongly. Reported as "may" warnings, but for what JAX always
    raises at the arguments the project's run passed (forward mode on a custom_vjp, a raise inside
    the rule where the other callers run): errors."""
    status = result.get("status")
    recorded_args = (getattr(checker, "plan", None) or {}).get("caller_args") or {}
    if not callers or not getattr(checker, "positions", None):
        return result
    if status not in ("verified", "transform") and not (recorded_args and status in ("warned", "failed")):
        return result
    if getattr(checker, "complex_at", None) and not recorded_args:
        return result  # the callers take complex arguments as they are, not as the checks' real pairs
    raises_only = status not in ("verified", "transform")
    jax = checker.jax
    code = "VJP501" if checker.kind == "vjp" else "VJP502"
    full, all_vals = list(checker.samples[0]), list(checker.vals)
    names = [checker.param_name(i) for i in range(len(full))]
    found = []
    last, last_recorded, ran = None, None, False
    for name in callers:
        fn = getattr(module, name, None)
        if not callable(fn):
            continue
        own = recorded_args.get(name)
        borrowed = own is None and last_recorded is not None and caller_slots(fn, names, None) is None and \
            _only_varargs(fn)
        if borrowed:
            own = last_recorded  # `forward_usage(*args)` after `eval_fn(tokens, wi, wo)`
        if own is not None:
            last_recorded = own
            base = list(own)
            positions = [j for j, v in enumerate(base) if not isinstance(v, float) and checker.traceable(v)
                         and checker.is_real_float(v)]
            vals = [checker.widen(base[j]) if checker.x64 else base[j] for j in positions]
            where = "its caller `{}` (at the arguments the project's run passed {}: {})".format(
                name, "the caller before it, which it passes on" if borrowed else "it",
                ", ".join(checker.summary(v) for v in base) or "no arguments")
        else:
            if raises_only or (getattr(checker, "complex_at", None)):
                continue
            slots = caller_slots(fn, names, last)
            if slots is None:
                continue
            last = slots
            base = [full[i] for i in slots]
            positions = [j for j, i in enumerate(slots) if i in checker.positions]
            vals = [all_vals[checker.positions.index(slots[j])] for j in positions]
            where = "its caller `{}` (with the inputs made for `{}`: {})".format(
                name, checker.plan["qualname"], checker.describe_inputs() or "no arguments")
        if not positions:
            continue
        low = own is not None and checker.x64 and not getattr(checker, "narrow", "") and \
            _raises_only_with_x64(checker, fn, base)
        if not low:
            ran = _one_caller(checker, fn, name, base, positions, vals, where, own, borrowed, ran, raises_only,
                              status, only_grad, found)
            continue
        # With float64 on the caller raises at the run's own arguments, and runs with it off, as the
        # project runs it (a `lax.cond` whose branches then differ in dtype): checked with it off.
        saved = checker.prec
        checker.prec = "float32"
        try:
            with jax.enable_x64(False):
                ran = _one_caller(checker, fn, name, base, positions, [base[j] for j in positions],
                                  where + " (float64 off, as the project runs it: with it on the caller raises {})"
                                  .format(low[:200]), own, borrowed, ran, raises_only, status, only_grad, found, True)
        finally:
            checker.prec = saved
    for name, detail, severity in found:
        checker.record(name, "failed", detail, code, severity=severity)
    if found:
        worst = "failed" if status == "failed" or any(s == "error" for _, _, s in found) else "warned"
        first = next((f for f in found if f[2] == "error"), found[0])
        result = dict(result, status=worst, reason=result.get("reason") if status == "failed" else first[1],
                      checks=checker.checks)
    return result


def _raises_only_with_x64(checker, fn, base):
    """What the caller raises at the run's arguments with float64 on, when with it off (as the
    project ran it) it runs or raises forward mode on the custom_vjp; else ""."""
    jax = checker.jax
    try:
        jax.block_until_ready(fn(*base))
        return ""
    except Exception as exc:
        if FORWARD_ON_VJP.search(str(exc)):
            return ""
        wide = describe_exc(exc)
    try:
        with jax.enable_x64(False):
            jax.block_until_ready(fn(*base))
    except Exception as exc:
        if not FORWARD_ON_VJP.search(str(exc)):
            return ""
    return wide


def _one_caller(checker, fn, name, base, positions, vals, where, own, borrowed, ran, raises_only, status,
                only_grad, found, low=False):
    """One caller's checks (check_callers); whether a caller has run eagerly so far (`ran`)."""
    jax, np = checker.jax, checker.np
    # JAX raises forward mode on a custom_vjp whatever the values; a raise inside the rule is
    # certain only at the arguments the run passed this very caller.
    certain = "error" if own is not None else "warning"
    in_rule = "error" if own is not None and not borrowed else "warning"
    try:
        out = jax.block_until_ready(fn(*base))
    except Exception as exc:
        if FORWARD_ON_VJP.search(str(exc)):
            found.append(("caller", "{} applies forward-mode autodiff (jax.jvp, jacfwd) to this custom_vjp, and "
                          "JAX raises {}; a custom_vjp supports reverse mode only: use jax.grad/jacrev/vjp "
                          "in the caller, or define the rule with custom_jvp".format(where, describe_exc(exc)),
                          certain))
        elif ran:
            rule = rule_frame(checker.fo, exc)
            if rule:  # another caller ran with these inputs: what this one does to the rule raises in it
                found.append(("caller", "{} raises inside the {} where the module's other callers run: {}; the "
                              "rule cannot take what this caller does with it (e.g. differentiate it again: "
                              "jax.hessian, forward over reverse)".format(where, rule, describe_exc(exc)),
                              in_rule))
        return ran
    ran = True
    if raises_only:
        return ran
    leaves = jax.tree_util.tree_leaves(out)
    if not leaves or not all(checker.is_real_float(x) for x in leaves):
        return ran
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
                where, describe_exc(exc)), "warning"))
        return ran
    if status != "verified":
        return ran  # a gradient transform differs from finite differences on purpose: not compared
    weights = checker.random_like(jax.tree_util.tree_map(lambda x: np.asarray(x, dtype=np.float64), out))
    F = checker.bind(fn, base, positions)

    def scalar(*vals, F=F, weights=weights):
        o = F(*vals)
        return sum(checker.jnp.sum(checker.jnp.asarray(a, dtype=checker.jnp.float64 if checker.x64 and not low else
                                                       checker.jnp.float32) * w)
                   for a, w in zip(jax.tree_util.tree_leaves(o), jax.tree_util.tree_leaves(weights)))
    checker.vals = vals  # what fd_directional shifts
    try:
        g = jax.grad(scalar, argnums=tuple(range(len(vals))))(*vals)
    except Exception as exc:
        if FORWARD_ON_VJP.search(str(exc)) or "custom_" in traceback.format_exc():
            found.append(("caller grad", "{} works eagerly but raises under jax.grad: {}".format(
                where, describe_exc(exc)), "warning"))
        return ran
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
                          "differentiate the caller as written")), "warning"))
    return ran


def _only_varargs(fn):
    """Whether `fn` takes only `*args` (and optional keywords): what its caller passed on."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    return any(p.kind == p.VAR_POSITIONAL for p in params) and not any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in params)


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
    checker.positions, checker.checks, checker.complex_at = positions, [], []
    wide = checker.x64
    checker.vals = [checker.widen(args0[i]) if wide else args0[i] for i in positions]
    checker.prec = "float64" if wide else "float32"
    found = check_callers(checker, module, {"status": "verified"}, callers, only_grad=True)
    if found.get("status") != "warned":
        return result
    return dict(result, status="warned", reason=found["reason"], checks=checker.checks,
                inputs=getattr(checker, "inputs", []))


