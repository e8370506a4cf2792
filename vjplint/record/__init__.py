"""Record the arguments each custom_vjp/custom_jvp receives in the project's own runs, for
`vjplint check-grads` (its inputs before EXAMPLE_ARGS(), call sites and probing).

Two ways in:

* `pytest -p vjplint.record ...`: this package is a pytest plugin;
* `vjplint check-grads --record -- CMD ...`: CMD runs with a `sitecustomize` that loads this
  package by its path (as `_vjplint_record`) in every Python it starts.

Nothing here imports JAX: a hook waits for the recorded program to import `jax`, then wraps
`custom_vjp.__call__` and `custom_jvp.__call__`. Each call is keyed by the undecorated
function's `__module__` and `__qualname__` (`pkg.ops.f`). Kept per function, bounded: up to
MAX_SIGNATURES distinct argument signatures (tree structure, shapes, dtypes, non-array values),
up to MAX_CALLS concrete calls of each (values copied to NumPy; arrays over MAX_ELEMENTS are
kept as shape and dtype only), and traced arguments (under jit or vmap) as shape and dtype only;
under `grad` the concrete values behind the tracers are recorded. At exit each process writes
one pickle into the recording directory (`<cache dir>/recorded/`); check-grads reads them all.
Only the standard library is imported at module level (and `vjplint.batch.cache` by the pytest
plugin, to find the cache directory).

After the run, each process checks the custom derivatives it called, in that process
(check_live). PYTEST_DONT_REWRITE: a `--record` run loads this package before pytest names it
as a plugin (PYTEST_PLUGINS), too late for pytest to rewrite its asserts (it has none).

The parts: `calls` (the hook, the recording's state, writing and reading the pickles), `sampling`
(what is kept of the calls: distinct values, spread), `live` (the checks in the recorded process
after the run); here, the pytest plugin and the `sitecustomize` of `check-grads --record`. The
parts import each other relatively, so that the package loaded by path under another name holds
one recording.
"""

from __future__ import annotations

import os

from vjplint.batch.cache import cache_root
from vjplint.batch.fastpath import ensure_cache_root
from vjplint.project.workspace import Overrides, Workspace

from .calls import ENV, SUBDIR, _at_exit, clear, install, note_raise, read, write
from .live import LIVE_FORMAT, PATHS_ENV, read_live, read_raises, wanted

__all__ = ["ENV", "LIVE_FORMAT", "LOADED_AS", "PATHS_ENV", "SUBDIR", "clear", "default_directory", "install", "read",
           "read_live", "read_raises", "sitecustomize_dir", "wanted", "write"]

LOADED_AS = "_vjplint_record"  # this package's name in a process the sitecustomize set up (a pytest plugin there)


# -- pytest -p vjplint.record ------------------------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--vjplint-record-dir", default=None,
                     help="where vjplint.record writes the recorded custom_vjp/custom_jvp arguments "
                          "(default: $VJPLINT_RECORD_DIR, else <cache dir>/recorded of the nearest pyproject.toml)")


def pytest_configure(config):
    directory = config.getoption("--vjplint-record-dir") or os.environ.get(ENV)
    if not directory:
        directory = default_directory(str(config.rootpath))
        if not os.environ.get("PYTEST_XDIST_WORKER"):
            clear(directory)
        os.environ[ENV] = directory  # xdist workers and subprocesses record into the same place
    install(directory)


def pytest_runtest_makereport(item, call):
    """A test that raised: where (a factory whose custom derivative's registration raises is then
    that definition's failure, though nothing was called). Returns None: pytest's own report stands."""
    if call.excinfo is not None and not call.excinfo.errisinstance((KeyboardInterrupt, SystemExit)) and \
            call.excinfo.typename not in ("Skipped", "XFailed", "Exit"):  # pytest's own outcomes
        note_raise(call.excinfo.value)


def pytest_sessionfinish(session):
    """At the end of the session, before an xdist worker reports that it finished (its controller
    ends it soon after, without exit handlers): the recording, then the checks."""
    if not os.environ.get(PATHS_ENV):  # by default, the definitions under pytest's root directory
        os.environ[PATHS_ENV] = str(session.config.rootpath)
    _at_exit()


def pytest_unconfigure(config):
    _at_exit()


def default_directory(start):
    """<cache dir>/recorded for the settings that apply at `start` (as `vjplint check-grads` finds them)."""
    root = cache_root(Workspace(Overrides(), None).anchor([start]))
    ensure_cache_root(str(root))
    return str(root / SUBDIR)


# -- `vjplint check-grads --record -- CMD`: loaded by path from a generated sitecustomize ----------------
SITECUSTOMIZE = '''\
# Written by `vjplint check-grads --record`: record custom_vjp/custom_jvp arguments in this process.
import importlib.machinery, importlib.util, os, sys

_here = os.path.dirname(os.path.abspath(__file__))
try:
    _spec = importlib.util.spec_from_file_location("_vjplint_record", {path!r},
                                                   submodule_search_locations=[os.path.dirname({path!r})])
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["_vjplint_record"] = _module  # before it runs: its parts import each other relatively
    _spec.loader.exec_module(_module)
    _module.install(os.environ[{env!r}])
except Exception as _exc:
    sys.stderr.write("vjplint: warning: cannot record in this process: %r\\n" % (_exc,))
    import types
    sys.modules["_vjplint_record"] = types.ModuleType("_vjplint_record")  # PYTEST_PLUGINS names it
# Then the sitecustomize this one hides, if any.
_saved = sys.modules.pop("sitecustomize", None)
try:
    _other = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here])
    if _other is not None:
        _other_module = importlib.util.module_from_spec(_other)
        _other.loader.exec_module(_other_module)
finally:
    if _saved is not None:
        sys.modules["sitecustomize"] = _saved
'''


def sitecustomize_dir(temp):
    """A directory holding the sitecustomize that loads this package: put it first on PYTHONPATH."""
    path = os.path.join(temp, "sitecustomize.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(SITECUSTOMIZE.format(path=os.path.abspath(__file__), env=ENV))
    return temp
