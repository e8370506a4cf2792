"""Shared test helpers (the real CLI in a subprocess, the core API, fixture loading) and the
test layers.

Every test belongs to exactly one layer, a pytest marker registered in pyproject.toml:
`unit` (in-process: no subprocess, no JAX), `cli` (the real CLI in subprocesses), `server`
(the Language Server through pytest-lsp), `jax` (imports or runs JAX), `fuzz` (hypothesis).
A module lives in the folder of its main layer (tests/unit, tests/cli, tests/server, tests/jax,
tests/fuzz), which gives its tests their layer; a test of another layer carries its mark
(`@pytest.mark.cli`). A test that uses the `jax_cpu` fixture must be `jax`, a hypothesis test
`fuzz`. While a unit test runs, starting a process or importing JAX fails it (see `_UnitGuard`).
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.util
import multiprocessing.util
import functools
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, TypeVar

import pytest

import signal as _signal

# pytest-xdist's workers ignore SIGINT (their controller handles Ctrl-C), and an ignored signal is
# inherited across exec: the CLI processes the tests start would then never see the SIGINT that
# the interrupt tests send them. Each worker gives SIGINT its default Python handler back.
if _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)


ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# The backend the jax layer runs on: the CPU unless JAX_PLATFORMS names another (a lent
# accelerator: `JAX_PLATFORMS=tpu pytest -m jax`); every subprocess that runs JAX gets the same.
JAX_PLATFORM = os.environ.get("JAX_PLATFORMS") or "cpu"
JAX_ENV = {"JAX_PLATFORMS": JAX_PLATFORM}
# JAX in the tests' own process (the ground truth, the fix checks) runs on the CPU when the
# children get a TPU: libtpu lets one process at a time hold the chip, and a test that opened it
# in-process would keep it from every verify/check-grads child after it ("The TPU is already in
# use by process ..."). `VJPLINT_TEST_IN_PROCESS_PLATFORM=tpu,cpu` runs the in-process tests on
# it instead (then run them alone: `pytest -m jax tests/jax/test_jax_ground_truth.py`).
IN_PROCESS_PLATFORM = os.environ.get("VJPLINT_TEST_IN_PROCESS_PLATFORM") or (
    "cpu" if "tpu" in JAX_PLATFORM.lower().split(",") else JAX_PLATFORM)


@functools.lru_cache(maxsize=None)
def _device() -> Tuple[str, str, str]:
    """(label, kind, platform) of the device verify and check-grads run on. Asked of a child
    process: a TPU serves one process at a time, and the tests' own would keep it."""
    if JAX_PLATFORM == "cpu":
        return "cpu", "cpu", "cpu"
    code = ("import jax; d = jax.devices()[0]; print('cpu' if d.platform == 'cpu' else str(d)); "
            "print(d.device_kind); print(d.platform)")
    # Behind the lock every vjplint child takes (vjplint/verify/process.py `hold_the_chip`): with
    # `-n 4`, four workers asking at once found the chip in use and got no answer.
    with _chip_lock():
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                              env={**os.environ, **JAX_ENV})
    lines = proc.stdout.strip().splitlines()
    if len(lines) < 3:
        raise RuntimeError(f"could not ask JAX for its device (JAX_PLATFORMS={JAX_PLATFORM}, exit "
                           f"{proc.returncode}): {proc.stderr.strip()[-2000:]}")
    label, kind, platform = lines[-3:]
    return label, kind, platform


@contextlib.contextmanager
def _chip_lock():
    """The file lock vjplint's children take before they open a single-process accelerator."""
    from vjplint.verify.process import hold_the_chip

    handle = hold_the_chip(lambda **event: None)
    try:
        yield
    finally:
        if handle is not None:
            handle.close()


def device_label() -> str:
    """How verify and check-grads name the device they ran on: "cpu", or the device itself."""
    return _device()[0]


def device_summary() -> str:
    """How verify's summary line names the device: its label, and its kind where that says more
    (`TPU_0(process=0,(0,0,0,0)) (TPU v5 lite)`)."""
    label, kind, _ = _device()
    return label if kind in ("", label) else f"{label} ({kind})"


def device_has_float64() -> bool:
    """check-grads widens float inputs to float64 except on a TPU, which has none (docs/check-grads.md)."""
    return _device()[2] != "tpu"


def expected_device(label: str) -> bool:
    return label == device_label()
RULE_FIXTURES = FIXTURES / "rules"

LAYERS = ("unit", "cli", "server", "jax", "fuzz")
TESTS = Path(__file__).resolve().parent  # tests/<layer>/test_*.py: the folder is the layer


def pythonpath(*dirs: object) -> str:
    """PYTHONPATH for a subprocess: `dirs` first, then whatever the environment already had (a
    machine whose JAX comes from PYTHONPATH, as on a lent accelerator, keeps it)."""
    inherited = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([*(str(d) for d in dirs), *([inherited] if inherited else [])])


def run_cli(*args: str, cwd: Optional[Path] = None, stdin: Optional[bytes] = None,
            env: Optional[dict] = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `python -m vjplint ARGS` as users do; returns text stdout/stderr."""
    full_env = {**os.environ, "PYTHONPATH": pythonpath(ROOT), "NO_COLOR": "1", **(env or {})}
    full_env.pop("VJPLINT_OUTPUT_FORMAT", None)
    proc = subprocess.run([sys.executable, "-m", "vjplint", *args], cwd=cwd or ROOT, input=stdin,
                          capture_output=True, env=full_env, timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                                       proc.stderr.decode("utf-8", "replace"))


def lint(source: str, select: Optional[Sequence[str]] = None, filename: str = "example.py", **config):
    """The core API on a string; returns the diagnostics."""
    from vjplint.settings.config import Config
    from vjplint.lint.engine import lint_source

    cfg = Config(select=tuple(select) if select is not None else None, **config)
    return lint_source(filename, source, cfg).diagnostics


def load_fixture_module(path: Path) -> types.ModuleType:
    """Import a fixture file as a fresh module (for running it on real JAX)."""
    name = "fixture_" + "_".join(path.relative_to(FIXTURES).with_suffix("").parts).replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rule_fixture_dirs() -> List[Path]:
    return sorted(p for p in RULE_FIXTURES.iterdir() if p.is_dir()) if RULE_FIXTURES.exists() else []


T = TypeVar("T")


def check_each(cases: Iterable[T], check: Callable[[T], Any], name: Callable[[T], str] = str,
               least: int = 1) -> List[Any]:
    """A property over a corpus as one test: `check` runs on every case, and the test fails once,
    naming each case that failed with its error (a test item per case costs the suite more than
    the check). Fewer than `least` cases fail it too: an empty corpus proves nothing. Returns what
    each check returned."""
    results: List[Any] = []
    failures: List[str] = []
    count = 0
    for case in cases:
        count += 1
        try:
            results.append(check(case))
        except Exception as error:  # an assertion, or the code under test raising
            failures.append(f"{name(case)}: {type(error).__name__}: {error}")
    assert count >= least, f"{count} cases, fewer than {least}: is the corpus there?"
    if failures:
        more = f"\n\n... and {len(failures) - 10} more" if len(failures) > 10 else ""
        raise AssertionError(f"{len(failures)} of {count} cases failed:\n\n" + "\n\n".join(failures[:10]) + more)
    return results


@pytest.fixture(scope="session")
def jax_cpu():
    """Real JAX on CPU (or whatever JAX_PLATFORMS says). The test extra installs JAX: a missing
    JAX fails the test rather than skipping it."""
    os.environ.setdefault("JAX_PLATFORMS", JAX_PLATFORM)
    import jax

    if IN_PROCESS_PLATFORM != JAX_PLATFORM:
        jax.config.update("jax_platforms", IN_PROCESS_PLATFORM)  # read when JAX first opens a backend
    return jax


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-snapshots", action="store_true", default=False,
                     help="rewrite tests/snapshots/ from the rules' current output (as VJPLINT_UPDATE_SNAPSHOTS=1)")


# -- layers --------------------------------------------------------------------------------------
def _folder_layer(item: pytest.Item) -> str:
    """The layer a test module's folder names: tests/<layer>/test_x.py."""
    path = Path(str(item.fspath)).resolve()
    folder = path.parent.name if path.parent.parent == TESTS else None
    if folder not in LAYERS:
        raise pytest.UsageError(f"{item.nodeid}: a test module lives in the folder of its layer, "
                                f"tests/<{'|'.join(LAYERS)}>/ (found in {path.parent})")
    return folder


def _layer_of(item: pytest.Item) -> str:
    """An explicit mark, else the folder's layer; a test that uses real JAX (the `jax_cpu`
    fixture) must be `jax`, a hypothesis test `fuzz`, however it got its layer."""
    explicit = [layer for layer in LAYERS if item.get_closest_marker(layer) is not None]
    if len(explicit) > 1:
        raise pytest.UsageError(f"{item.nodeid} is in several test layers: {explicit}")
    layer = explicit[0] if explicit else _folder_layer(item)
    if "jax_cpu" in getattr(item, "fixturenames", ()) and layer != "jax":
        raise pytest.UsageError(f"{item.nodeid} uses the jax_cpu fixture: mark it @pytest.mark.jax")
    if getattr(getattr(item, "obj", None), "is_hypothesis_test", False) and layer != "fuzz":
        raise pytest.UsageError(f"{item.nodeid} is a hypothesis test: mark it @pytest.mark.fuzz")
    return layer


# Python versions (README, "Python versions"): JAX 0.10.2, which the jax layer is measured on, has
# wheels for 3.11+ only and pytest-lsp (test_server.py) installs on 3.10+; on older interpreters
# those tests (every module that imports pytest_lsp) are skipped with that reason instead of
# failing on a missing module.
collect_ignore = [f"server/{name}" for name in (
    "test_server.py", "test_server_helix.py", "test_server_incremental.py", "test_server_notebooks.py",
    "test_server_project.py", "test_server_lint_helper.py")] if sys.version_info < (3, 10) else []
NO_JAX_REASON = "the jax layer needs JAX 0.10.2, which needs Python 3.11+"
# Tests of other layers that run `vjplint verify`/`check-grads` as documented, hence need JAX too.
NEEDS_JAX = ("unit/test_docs.py::test_shell_blocks_run_as_written[README.md]",
             "unit/test_docs.py::test_shell_blocks_run_as_written[docs/verify.md]",
             "unit/test_docs.py::test_shell_blocks_run_as_written[docs/check-grads.md]")
# Tests that assert the 3.10+ parser's syntax-error messages and positions (VJP900 reports what
# the parser says; 3.9's words and places several errors differently).
PARSER_310 = ("cli/test_bad_input.py::test_syntax_errors_are_vjp900_at_their_position_and_the_run_goes_on",
              "cli/test_cli.py::test_syntax_error_is_vjp900_and_the_run_goes_on",
              "cli/test_output_formats.py::test_github_annotations_through_the_cli",
              "cli/test_output_formats.py::test_lsp_output_maps_file_uris_to_lsp_diagnostics")


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    for item in items:
        layer = _layer_of(item)
        if item.get_closest_marker(layer) is None:
            item.add_marker(getattr(pytest.mark, layer))
        if sys.version_info < (3, 11) and (item.get_closest_marker("jax") is not None
                                           or item.nodeid.endswith(NEEDS_JAX)):
            item.add_marker(pytest.mark.skip(reason=NO_JAX_REASON))
        if sys.version_info < (3, 10) and item.nodeid.endswith(PARSER_310):
            item.add_marker(pytest.mark.skip(reason="asserts the syntax errors of Python 3.10+'s parser"))


class UnitLayerViolation(AssertionError):
    """A unit test started a process or imported JAX."""


MOVE_HINT = ("unit tests run in-process without JAX; move the module to tests/cli, tests/server, tests/jax "
             "or tests/fuzz, or mark the test @pytest.mark.cli/server/jax/fuzz")


def _is_jax(name: str) -> bool:
    return name.split(".", 1)[0] in ("jax", "jaxlib")


class _UnitGuard:
    """Refuses process creation and JAX imports, and remembers each attempt: the code under test
    may swallow the exception (vjplint turns most failures into messages), the record is kept."""

    SPAWNERS: Tuple[Tuple[Any, str], ...] = (
        (subprocess, "Popen"), (os, "system"), (os, "fork"), (os, "forkpty"), (os, "posix_spawn"),
        (os, "posix_spawnp"), (os, "spawnv"), (os, "spawnve"), (os, "execv"), (os, "execve"),
        (multiprocessing.util, "spawnv_passfds"),
    )

    def __init__(self) -> None:
        self.violations: List[str] = []
        self._saved: List[Tuple[Any, str, Any]] = []

    def _refuse(self, what: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            self.violations.append(f"started a process ({what})")
            raise UnitLayerViolation(f"a unit test may not start a process ({what}): {MOVE_HINT}")
        return refused

    def _blocked_import(self, name: str) -> None:
        self.violations.append(f"imported {name}")
        raise UnitLayerViolation(f"a unit test may not import {name}: {MOVE_HINT}")

    def __enter__(self) -> "_UnitGuard":
        self.modules_before = {m for m in sys.modules if _is_jax(m)}
        real_import, real_import_module = builtins.__import__, importlib.import_module

        def guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                           level: int = 0) -> Any:
            if level == 0 and _is_jax(name):  # also when JAX is already in sys.modules
                self._blocked_import(name)
            return real_import(name, globals, locals, fromlist, level)

        def guarded_import_module(name: str, package: Optional[str] = None) -> Any:
            if not name.startswith(".") and _is_jax(name):
                self._blocked_import(name)
            return real_import_module(name, package)

        patches: List[Tuple[Any, str, Any]] = [(builtins, "__import__", guarded_import),
                                               (importlib, "import_module", guarded_import_module)]
        patches += [(owner, name, self._refuse(f"{owner.__name__}.{name}"))
                    for owner, name in self.SPAWNERS if hasattr(owner, name)]
        for owner, name, replacement in patches:
            self._saved.append((owner, name, getattr(owner, name)))
            setattr(owner, name, replacement)
        return self

    def __exit__(self, *exc: Any) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()
        new = sorted({m for m in sys.modules if _is_jax(m)} - self.modules_before)
        if new:
            self.violations.append(f"left JAX modules in sys.modules: {', '.join(new[:5])}")


def _guarded_phase(item: pytest.Item):
    if item.get_closest_marker("unit") is None:
        return (yield)
    with _UnitGuard() as guard:
        result = yield
    if guard.violations:
        raise UnitLayerViolation(f"{item.nodeid} is a unit test but it "
                                 f"{'; '.join(dict.fromkeys(guard.violations))}: {MOVE_HINT}")
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    return (yield from _guarded_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    return (yield from _guarded_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: Optional[pytest.Item]):
    return (yield from _guarded_phase(item))


def pytest_configure(config: pytest.Config) -> None:
    # On a TPU run, before any test (or test module) imports JAX in this process: see
    # IN_PROCESS_PLATFORM. Never on the CPU, where importing JAX here would slow every unit run.
    if IN_PROCESS_PLATFORM != JAX_PLATFORM:
        import jax

        jax.config.update("jax_platforms", IN_PROCESS_PLATFORM)
