"""The verification child's process plumbing, shared by the verify harness and the check-grads
child (vjplint/gradcheck/child.py): the result events, loading the user's module from its text,
the chip lock, watching the parent, the errors' wording. Only the standard library: vjplint
imports it (single_process_accelerator), and the children load it by its path.
"""

import dataclasses
import functools
import importlib
import importlib.util
import json
import os
import re
import sys
import tempfile
import threading
import time
import traceback
import types


class Unverifiable(Exception):
    """The function cannot be checked: the message says why."""


_TRACEBACK_HEAD = "Traceback (most recent call last):"


def describe_exc(exc):
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if first.endswith(_TRACEBACK_HEAD):
        # An error that carries another's traceback (a host callback's: "CpuCallback error:
        # Traceback ..."): its first line says nothing; the wrapped exception is its last
        # unindented line ("RuntimeError: jax.pure_callback failed to find a local CPU device").
        inner = next((line for line in reversed(text[1:]) if line and not line[0].isspace()), "")
        first = (first[:-len(_TRACEBACK_HEAD)].rstrip() + " " + inner).strip()
    first = re.sub(r" at 0x[0-9a-fA-F]+", "", first)  # addresses vary between runs
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


# Set in the environment of a command that runs while a vjplint process holds the chip lock for
# it (`check-grads --record -- CMD`): the command's own vjplint children must not wait for it.
CHIP_HELD_ENV = "VJPLINT_CHIP_HELD_BY_PARENT"


def hold_the_chip(emit):
    """Wait for the TPU (when JAX would open one) behind a file lock that every vjplint child takes,
    so concurrent runs (an editor beside pre-commit, --jobs) take turns instead of failing. The
    lock lasts as long as the returned handle, i.e. this process. The events tell the parent when
    the wait began and ended: the time limit does not count it."""
    if not single_process_accelerator() or os.environ.get(CHIP_HELD_ENV):
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


def hold_the_chip_for(env):
    """Take the chip lock for a command this process starts and that opens the chip itself (the
    recorded run of `check-grads --record -- CMD`, which checks in its own process), and mark
    `env` so that the command's vjplint children do not wait for this process. Returns the
    handle to close when the command ends (None: nothing to hold)."""
    handle = hold_the_chip(lambda **event: None)
    if handle is not None:
        env[CHIP_HELD_ENV] = "1"
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


def _user_frame(exc, path):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    return "line {}".format(frames[-1].lineno) if frames else ""

