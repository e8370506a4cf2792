"""Checking in the process that made the calls, after the run (issue #44): each custom derivative
the process called, with the objects it called and at the values it recorded (a fork is unsafe
once JAX's threads run), by the check-grads child's checks (vjplint/gradcheck/child.py, loaded by
its path); the verdicts are written as JSON beside the recordings, and `read_live` gathers them
for check-grads."""

from __future__ import annotations

import importlib.util
import os
import sys
import time

from vjplint.project.workspace import Overrides, Workspace

from .sampling import MAX_CALLS, _Abstract, signature_order, spread

PATHS_ENV = "VJPLINT_RECORD_PATHS"  # where the definitions to check live (os.pathsep-separated)
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


def check_live(_defs, _lock, _state, replay=None):
    """Check every custom derivative this process called (`_defs`, the recording's state:
    vjplint.record.calls), with the objects it called and at the
    values it recorded (one called only under `jit`: at the values its callers' rerun with jit off gives,
    `replay`), in this process (a fork is unsafe once JAX's threads run), and write the
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
    x64, reference, note = child.precision(jax, device)  # float64 where the device has it; else references on the CPU
    saved = (jax.config.jax_enable_x64, jax.config.jax_default_matmul_precision)
    label = "cpu" if device.platform == "cpu" else str(device)
    # Each verdict is appended as soon as it is known (a crash or an out-of-memory kill then loses
    # the definition being checked, not the run's): a header naming every definition to check, a
    # "begin" line before each, its verdict after.
    out = _Appender(_state["directory"])
    out.add({"format": LIVE_FORMAT, "device": label, "device_kind": getattr(device, "device_kind", ""),
             "jax_version": jax.__version__, "pid": os.getpid(), **({"reference": note} if note else {}),
             "pending": [_identity(filename, line, entry) for (filename, line, _name), entry in entries]})
    try:
        if x64:
            jax.config.update("jax_enable_x64", True)
        else:
            jax.config.update("jax_default_matmul_precision", "highest")
        for k, ((filename, line, _name), entry) in enumerate(entries):
            _progress(k, len(entries), started)
            out.add({"begin": k})
            try:
                verdict = _check_entry(child, jax, numpy, filename, line, entry, x64, reference,
                                       replay=replay, where=(filename, line, _name))
            except Exception as exc:  # one definition's trouble does not stop the others
                verdict = dict(_identity(filename, line, entry), row=line, text="", calls=0, seconds=0,
                               result={"status": "unverified", "reason": "the in-process check failed: {!r}"
                                       .format(exc)[:500], "checks": [], "inputs": []})
            verdict.update(_release(jax))  # what it compiled goes before the next definition
            out.add({"verdict": verdict})
        _progress(len(entries), len(entries), started)
    except BaseException as exc:  # Ctrl-C while checking: the run's own outcome stands
        sys.stderr.write("vjplint: warning: checking the recorded custom derivatives stopped: {!r}\n".format(exc))
    finally:
        jax.config.update("jax_enable_x64", saved[0])
        jax.config.update("jax_default_matmul_precision", saved[1])
    out.add({"done": True, "seconds": time.time() - started})
    out.close()


def _identity(filename, line, entry):
    return {"file": os.path.realpath(filename), "line": line, "qualname": getattr(entry["fun"], "__qualname__", "?"),
            "key": entry["key"], "kind": entry["kind"], "objects": len(entry["objects"])}


def _release(jax):
    """Drop what checking one definition compiled (JAX's caches hold every executable of a function
    that stays alive, and the recording keeps each called object alive): its memory then does not
    add up over a run of many definitions. What is left: the process's resident memory (MiB) and
    the backend's live executables."""
    import gc

    try:
        jax.clear_caches()
    except Exception:
        pass
    gc.collect()
    measured = {"rss_mib": _rss_mib()}
    try:
        measured["executables"] = len(jax.devices()[0].client.live_executables())
    except Exception:
        pass
    return measured


def _rss_mib():
    """This process's resident memory now, in MiB (Linux; None elsewhere)."""
    try:
        with open("/proc/self/statm") as handle:
            return round(int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20, 1)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class _Appender:
    """One JSON line per record, appended with a single write to a file opened for appending (a
    record is there whole or not at all; a reader skips a torn last line); nothing raises."""

    def __init__(self, directory):
        self.fd = None
        try:
            os.makedirs(directory, exist_ok=True)
            name = os.path.join(directory, "live-{}-{}.jsonl".format(os.getpid(), int(time.time() * 1000)))
            self.fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError:
            pass

    def add(self, record):
        import json

        if self.fd is None:
            return
        try:
            os.write(self.fd, (json.dumps(record, default=str) + "\n").encode("utf-8"))
        except (OSError, TypeError, ValueError):
            pass

    def close(self):
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None


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
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gradcheck", "child.py")
    spec = importlib.util.spec_from_file_location("_vjplint_gradcheck_child", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_entry(child, jax, numpy, filename, line, entry, x64, reference=None, replay=None, where=None):
    fun = entry["fun"]
    started = time.time()
    plan, row, digest = live_plan(fun, entry["kind"], filename, line, nondiff_of(entry["objects"][0]))
    plan.update(kind=entry["kind"], key=entry["key"] or plan["qualname"])
    recorded_callers = {name: list(args) for name, args in (entry.get("callers") or {}).items()
                        if name in plan.get("callers", ())}
    if recorded_callers:  # the module's callers at the arguments the run passed them (calls._note_callers)
        plan["caller_args"] = recorded_callers
    signatures = sorted(entry["signatures"].items(), key=lambda item: (
        bool(item[1]["kept"]) and all(pos is None for pos, _ in item[1]["kept"]),  # nothing finite: last
        signature_order(item[0], item[1]["kept"], item[1]["count"])))
    signatures = [slot for _sig, slot in signatures]
    count = signatures[0]["count"] if signatures else 0
    calls = spread(signatures[0]["kept"], MAX_CALLS) if signatures and signatures[0]["kept"] else []
    module = sys.modules.get(getattr(fun, "__module__", None) or "")
    if not calls and signatures and signatures[0].get("shapes") is not None:
        # Only traced calls (under `jit`): the values its callers' rerun with jit off gives; else
        # their shapes, with made-up values.
        replayed = replay(where, entry, module) if replay is not None and where is not None else None
        if replayed:
            caller, fresh = replayed
            slot = sorted(fresh.items(), key=lambda item: signature_order(item[0], item[1]["kept"], item[1]["count"]))[0][1]
            calls = spread(slot["kept"], MAX_CALLS)
            plan["replayed"] = ("; the run called it only under `jit`: its values from the caller `{}` rerun at the "
                                "arguments the run passed it, with jit off".format(caller))
        else:
            calls = [_markers(jax, signatures[0]["shapes"])]
    result = None
    if plan.get("unverifiable"):
        result = {"status": "unverified", "reason": plan["unverifiable"], "checks": [], "inputs": []}
    elif not calls:
        result = {"status": "unverified", "reason": "no call's arguments could be kept", "checks": [], "inputs": []}
    else:
        for obj in entry["objects"]:
            result = child.check_live(jax, numpy, obj, plan, [list(c) for c in calls], count, x64, module, reference)
            if result.get("status") != "verified":
                break
    raised = entry.get("raised")
    if raised:  # JAX raised at a call the run made, for the definition or the call itself
        where = raised.get("where")
        detail = "JAX raises at a call the project's run made{}: {}".format(
            " ({}:{})".format(os.path.relpath(where[0]) if where[0].startswith(os.getcwd()) else where[0], where[1])
            if where else "", raised["detail"])
        check = {"name": "call", "status": "failed", "detail": detail, "code": "VJP501" if entry["kind"] == "vjp"
                 else "VJP502", "max_error": None}
        result = dict(result or {}, status="failed", reason=detail,
                      checks=[check] + list((result or {}).get("checks", [])),
                      inputs=(result or {}).get("inputs", []))
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
    from vjplint.verify.synth import derivative_at, module_callers, nested_callers, plan_function, text_digest

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
        elif d.class_node is None:  # made inside a module-level function: it, and the functions that call it
            plan["callers"] = nested_callers(text, line)
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
        if p.kind == p.VAR_POSITIONAL:  # the recorded calls give the arity (the checker adds the rest)
            plan["vararg"] = {"name": p.name, "static": sorted(k for k in nondiff if k >= i)}
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
            continue
        plan["params"].append({"kind": "unknown", "name": p.name, "position": i, "source": "recorded",
                               "role": "static" if i in nondiff else "diff"})
    return plan, line, text_digest(text)



def write_raises(_state):
    """The exceptions the run saw escape (vjplint.record.calls.note_raise), each at its innermost
    frame under the paths checked, with a digest of that file (a stale one is ignored), as
    `raised-*.json` beside the recordings; check-grads reads them with `read_raises`."""
    raises = list(_state.get("raises") or ())
    if not raises or not _state["directory"] or _state.get("raises_written"):
        return
    _state["raises_written"] = True
    from vjplint.verify.synth import text_digest

    roots = [os.path.realpath(p) for p in os.environ.get(PATHS_ENV, "").split(os.pathsep) if p]
    digests, kept = {}, []
    for r in raises:
        frames = [f for f in r["frames"] if wanted(f[0], roots)]
        if not frames:
            continue
        filename, line = frames[-1]
        if filename not in digests:
            try:
                with open(filename, "rb") as handle:
                    digests[filename] = text_digest(handle.read().decode("utf-8", "surrogateescape"))
            except OSError:
                digests[filename] = ""
        kept.append({"file": filename, "line": line, "detail": r["detail"], "text": digests[filename]})
    if kept:
        _write_json(_state["directory"], {"format": LIVE_FORMAT, "raises": kept}, "raised")


def read_raises(directory):
    """Every process's escaped exceptions (write_raises): [{"file", "line", "detail", "text"}]."""
    import json

    found = []
    if not os.path.isdir(directory):
        return found
    for name in sorted(os.listdir(directory)):
        if not (name.startswith("raised-") and name.endswith(".json")):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("format") == LIVE_FORMAT:
            found += [r for r in data.get("raises", []) if isinstance(r, dict)]
    return found


def _write_json(directory, data, prefix="live"):
    import json

    try:
        os.makedirs(directory, exist_ok=True)
        name = os.path.join(directory, "{}-{}-{}.json".format(prefix, os.getpid(), int(time.time() * 1000)))
        with open(name + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(data, handle, default=str)
        os.replace(name + ".tmp", name)
    except OSError:
        pass


def read_live(directory):
    """Every process's in-process verdicts: ({(real file, first line of the code): [verdict, ...]},
    the device line of the first). A process that ended while checking (a crash, a kill for memory)
    keeps the verdicts it wrote; the definition it was checking is "not checked", saying so, and so
    is each one after it that only that process could reach (defined in a function or a class body);
    one reachable by its name is left to check-grads' own check at the recorded values."""
    import json

    found, device = {}, None
    if not os.path.isdir(directory):
        return found, device
    for name in sorted(os.listdir(directory)):
        if not name.startswith("live-"):
            continue
        if name.endswith(".jsonl"):
            header, verdicts = _read_lines(os.path.join(directory, name))
        elif name.endswith(".json"):  # one file per process, written at its end (before 2026-12-08)
            try:
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    header = json.load(handle)
            except (OSError, ValueError):
                continue
            verdicts = header.get("verdicts", []) if isinstance(header, dict) else []
        else:
            continue
        if not isinstance(header, dict) or header.get("format") != LIVE_FORMAT:
            continue
        device = device or {k: header.get(k, "") for k in ("device", "device_kind", "jax_version", "reference")}
        for verdict in verdicts:
            if not isinstance(verdict, dict) or "file" not in verdict or "line" not in verdict:
                continue
            for k in ("device", "device_kind", "jax_version", "reference"):
                verdict.setdefault(k, header.get(k, ""))
            found.setdefault((verdict["file"], verdict["line"]), []).append(verdict)
    return found, device


def _read_lines(path):
    """A process's header and verdicts (check_live's lines), with "not checked" verdicts for what a
    process that ended early left unchecked."""
    import json

    header, verdicts, begun, done = None, [], None, False
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().split("\n")
    except OSError:
        return None, []
    for text in lines:
        try:
            record = json.loads(text)
        except ValueError:
            continue  # a torn last line (the process was killed while writing it), or the empty tail
        if not isinstance(record, dict):
            continue
        if header is None:
            header = record
        elif "begin" in record:
            begun = record["begin"]
        elif "verdict" in record:
            verdicts.append(record["verdict"])
            begun = None
        elif record.get("done"):
            done = True
    if header is None or done:
        return header, verdicts
    pending = [p for p in header.get("pending", []) if isinstance(p, dict)]
    checked = {(v.get("file"), v.get("line")) for v in verdicts}
    crashed = pending[begun] if isinstance(begun, int) and 0 <= begun < len(pending) else None
    pid = header.get("pid", "?")
    for k, p in enumerate(pending):
        if (p.get("file"), p.get("line")) in checked:
            continue
        if p is crashed:
            reason = ("the process that called it (pid {}) ended while checking it: a crash, or killed for memory "
                      "(the definitions it checked before keep their verdicts); check it alone, with more memory "
                      "free".format(pid))
        elif not p.get("key") or "<locals>" in p.get("key", ""):
            reason = ("the process that called it (pid {}) ended before checking it{}; only that process could reach "
                      "it (defined in a function or a class body): run again with more memory free".format(
                          pid, ", while checking `{}` (line {})".format(crashed.get("qualname", "?"), crashed.get(
                              "line", "?")) if crashed else ""))
        else:
            continue  # reachable by its name: check-grads checks it at the recorded values
        verdicts.append(dict(p, row=p.get("line"), text="", calls=0, seconds=0,
                             result={"status": "unverified", "reason": reason, "checks": [], "inputs": []}))
    return header, verdicts
