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
Only the standard library, NumPy, JAX and the harness's modules are used here.

Its parts, loaded by their paths (this runs under `python -I`, or inside the recorded process,
where vjplint need not be importable): checker.py (GradChecker: set-up and verdicts), inputs.py,
modes.py (the checks), numerics.py (finite differences, comparisons), callers.py (the module's
own callers); vjplint/verify/process.py and verifier.py (the harness's). Here: the entry points
(`main`, `check_one`, `check_live`).
"""


import importlib
import importlib.util
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
R = _load("gradcheck", "reference")
C = _load("gradcheck", "checker")
K = _load("gradcheck", "callers")
Unverifiable, describe_exc = P.Unverifiable, P.describe_exc
GradChecker, check_callers, check_constant_arguments = C.GradChecker, K.check_callers, K.check_constant_arguments


def resources_result(detail):
    """The verdict of a check that ran out of memory: not checked, saying why (nothing about the rule)."""
    return {"status": "unverified", "reason": "out of memory while checking it ({}): nothing is said about the rule; "
            "check it again with more memory free (fewer jobs, `-j 1`, or this definition alone)".format(detail[:300]),
            "checks": [], "inputs": [], "resources": True}


def precision(jax, device):
    """(x64, reference device, note) for checks on `device`: float64 on a device that has it (a CPU,
    a GPU); on one without (a TPU), the rule at the inputs' dtype and the references in float64
    on the CPU (vjplint/gradcheck/reference.py), `note` saying so."""
    reference, note = R.reference_device(device.platform, R.cpu_devices(jax))
    return device.platform in R.NATIVE_FLOAT64, reference, note


def check_one(jax, numpy, module, plan, x64, live=None, reference=None):
    """One derivative's verdict: {"status", "reason", "checks", "inputs"}."""
    checker = None
    try:
        checker = GradChecker(jax, numpy, module, plan, x64, live, reference)
        result = checker.run()
        with checker.precision():  # float64 off for the callers too where the rule was checked so
            return check_callers(checker, module, result, plan.get("callers", []))
    except C.OutOfResources as exc:
        return resources_result(exc.detail)
    except Unverifiable as exc:
        if C.out_of_resources(str(exc)):
            return resources_result(str(exc))
        result = {"status": "unverified", "reason": str(exc), "checks": [], "inputs": []}
        try:
            if checker is not None:
                result = check_constant_arguments(checker, module, result, plan.get("callers", []))
        except C.OutOfResources as more:
            return resources_result(more.detail)
        except Exception:
            pass
        return result
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, C.OutOfResources) or C.out_of_resources(describe_exc(exc)):
            return resources_result(getattr(exc, "detail", None) or describe_exc(exc))
        return {"status": "unverified", "reason": "the checker failed: " + describe_exc(exc),
                "checks": [], "inputs": [], "traceback": traceback.format_exc(limit=6)}


def check_live(jax, numpy, obj, plan, calls, count, x64, module=None, reference=None):
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
        result = check_one(jax, numpy, module, one, x64, live=obj, reference=reference)
        status = result.get("status")
        if result.get("resources"):  # out of memory: the other calls would fare no better now
            return result
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
    P.exit_with_parent()
    emit = P.Emitter(result_path)
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
    chip = P.hold_the_chip(emit)  # noqa: F841 (held until this process exits)
    device = jax.devices()[0]
    x64, reference, note = precision(jax, device)
    if x64:
        jax.config.update("jax_enable_x64", True)
    else:  # a TPU's default float32 matmul keeps about three digits: too few for finite differences
        jax.config.update("jax_default_matmul_precision", "highest")
    label = "cpu" if device.platform == "cpu" else str(device)
    emit(event="start", device=label, device_kind=getattr(device, "device_kind", ""), jax_version=jax.__version__,
         python=sys.version.split()[0], **({"reference": note} if note else {}))
    for index, one in enumerate(modules):
        if "modules" in request:
            emit(event="module", index=index)
            sys.path[:0] = [p for p in one["sys_path"] if p not in sys.path]
        check_module(emit, jax, numpy, one, x64, reference)
    return 0


def check_module(emit, jax, numpy, request, x64, reference=None):
    try:
        module = importlib.import_module(request["module_name"])
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from user code included
        emit(event="import-error", which="original", detail=describe_exc(exc),
             where=P._user_frame(exc, request["path"]))
        emit(event="done")
        return
    emit(event="imported")
    for plan in request["functions"]:
        emit(event="begin", name=plan["qualname"])
        emit(event="function", name=plan["qualname"], **check_one(jax, numpy, module, plan, x64,
                                                                  reference=reference))
    emit(event="done")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
