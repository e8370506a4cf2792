"""Project-local wrappers found automatically (vjplint.model.wrappers, vjplint.project.index): a package on
disk with a trax-style backend module (`fastmath.custom_vjp(f, fwd, bwd, nondiff_argnums=...)`
dispatched through a table to a function that calls `jax.custom_vjp`, dropping nondiff_argnums),
a tjax-style shim class that renames `static_argnums` to nondiff_argnums, a wrapper that drops
them (one of them used in its own module), re-exports through `__init__` (`*` included) and
look-alikes that are not wrappers.
Every firing case is confirmed on JAX (test_the_firing_cases_fail_on_jax)."""

from __future__ import annotations

import ast
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli
from vjplint.project import index as project
from vjplint.settings.config import Config

FILES = {
    "mylib/__init__.py": "from .fastmath import custom_vjp\nfrom . import shims\n",
    "mylib/fastmath/__init__.py": "from mylib.fastmath.ops import *  # the backend-neutral API\n",
    "mylib/fastmath/ops.py": '''\
        from mylib.fastmath import jax_backend

        _BACKEND = jax_backend.JAX_BACKEND


        def backend():
            return _BACKEND


        def custom_vjp(f, f_fwd, f_bwd, nondiff_argnums=()):
            """Like trax: the JAX backend is handed f, fwd and bwd, not nondiff_argnums."""
            return backend()["custom_vjp"](f, f_fwd, f_bwd)
        ''',
    "mylib/fastmath/jax_backend.py": '''\
        import functools

        import jax


        def _custom_vjp(f, f_fwd, f_bwd, nondiff_argnums=()):
            @functools.partial(jax.custom_vjp, nondiff_argnums=nondiff_argnums)
            def _f(*args, **kwargs):
                return f(*args, **kwargs)

            _f.defvjp(f_fwd, f_bwd)
            return _f


        JAX_BACKEND = {"custom_vjp": _custom_vjp, "name": "jax"}
        ''',
    "mylib/shims.py": '''\
        import jax


        class custom_vjp:
            """Like tjax: `static_argnums` are JAX's nondiff_argnums."""

            def __init__(self, func, *, static_argnums=()):
                static_argnums = tuple(sorted(static_argnums))
                self.vjp = jax.custom_vjp(func, nondiff_argnums=static_argnums)

            def defvjp(self, fwd, bwd):
                self.vjp.defvjp(fwd, bwd)

            def __call__(self, *args):
                return self.vjp(*args)


        def plain_vjp(fun, nondiff_argnums=()):
            """Drops nondiff_argnums: every argument is differentiated."""
            return jax.custom_vjp(fun)


        def custom_jvp(fn, *args):
            """Not a wrapper: calls fn."""
            return fn(*args)


        def _identity(x):
            return x


        def registered(fn):
            """Not a wrapper: wraps a fixed function, not its parameter."""
            return jax.custom_vjp(_identity)


        def memoized(fn):
            """Not a wrapper: its custom_vjp calls `_identity`, not `fn`."""
            @jax.custom_vjp
            def inner(x):
                return _identity(x)

            return inner


        differentiable = plain_vjp
        ''',
    "mylib/local.py": '''\
        import jax


        def my_vjp(fun, nondiff_argnums=()):
            """Used in this module: drops nondiff_argnums."""
            return jax.custom_vjp(fun)


        def halve(x, k):
            return x / k


        halved = my_vjp(halve, nondiff_argnums=(1,))


        def halve_fwd(x, k):
            return x / k, k


        def halve_bwd(k, g):
            return (g / k,)


        halved.defvjp(halve_fwd, halve_bwd)
        ''',
    "mylib/smooth.py": '''\
        from mylib.shims import differentiable


        def soft(x, t):
            return x / t


        soft_vjp = differentiable(soft, nondiff_argnums=(1,))


        def soft_fwd(x, t):
            return x / t, t


        def soft_bwd(t, g):
            return (g / t,)


        soft_vjp.defvjp(soft_fwd, soft_bwd)
        ''',
    "mylib/layers.py": '''\
        import jax.numpy as jnp

        from mylib import fastmath


        def scale(w, x):
            return w * x


        def scale_fwd(w, x):
            return w * x, (w, x)


        def scale_bwd(res, g):
            w, x = res
            return (w * g,)


        scaled = fastmath.custom_vjp(scale, scale_fwd, scale_bwd, nondiff_argnums=(0,))


        def shift(unused, x):
            return x * 2.0


        def shift_fwd(unused, x):
            return x * 2.0, None


        def shift_bwd(_, g):
            return (None, g * 2.0)


        shifted = fastmath.custom_vjp(shift, shift_fwd, shift_bwd, nondiff_argnums=(0,))
        ''',
    "mylib/tools.py": '''\
        from functools import partial

        import jax.numpy as jnp

        from . import custom_vjp as top_level_vjp
        from .shims import custom_jvp, custom_vjp, memoized, plain_vjp, registered


        @partial(custom_vjp, static_argnums=(0,))
        def project(w, x):
            return x


        def project_fwd(w, x):
            return x, None


        def project_bwd(w, _, g):
            return (jnp.dot(w, g),)


        project.defvjp(project_fwd, project_bwd)


        def double(x, n):
            return x * n


        double_vjp = plain_vjp(double, nondiff_argnums=(1,))


        def double_fwd(x, n):
            return x * n, n


        def double_bwd(n, g):
            return (g * n,)


        double_vjp.defvjp(double_fwd, double_bwd)
        doubled = double_vjp(1.0, 2.0)

        called = custom_jvp(jnp.sin, 1.0)
        fixed = registered(jnp.sin)
        memo = memoized(jnp.sin)
        ''',
}


def write_tree(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


VIA_FASTMATH = ("(custom_vjp `{name}` through the wrapper `mylib.fastmath.ops.custom_vjp`, which calls "
                "`mylib.fastmath.jax_backend._custom_vjp` (the 'custom_vjp' entry of a dispatch table) at "
                "mylib/fastmath/ops.py:12, which calls `jax.custom_vjp` at mylib/fastmath/jax_backend.py:7)")
BWD_TYPEERROR = ("raises `TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) "
                 "structure as the args tuple of the primal function ...`; return one cotangent (or None) per "
                 "differentiable argument, in order")
EXPECTED = [
    ("mylib/layers.py:16:12: VJP306 bwd `scale_bwd` returns 1 cotangent but `scaled` has 2 differentiable "
     f"arguments (w, x); differentiating `scaled` {BWD_TYPEERROR} {VIA_FASTMATH.format(name='scaled')}"),
    ("mylib/local.py:21:12: VJP306 bwd `halve_bwd` returns 1 cotangent but `halved` has 2 differentiable "
     f"arguments (x, k); differentiating `halved` {BWD_TYPEERROR} (custom_vjp `halved` through the wrapper "
     "`mylib.local.my_vjp`, which calls `jax.custom_vjp` at mylib/local.py:6)"),
    ("mylib/smooth.py:16:12: VJP306 bwd `soft_bwd` returns 1 cotangent but `soft_vjp` has 2 differentiable "
     f"arguments (x, t); differentiating `soft_vjp` {BWD_TYPEERROR} (custom_vjp `soft_vjp` through the wrapper "
     "`mylib.shims.plain_vjp`, which calls `jax.custom_vjp` at mylib/shims.py:20)"),
    ("mylib/tools.py:10:13: VJP101 `w` (position 0) is in nondiff_argnums but is used as an array: "
     "`jnp.dot(w, g)`; a traced value here raises UnexpectedTracerError under jit, vmap or grad. Pass it as a "
     "regular argument, save it in the residuals and return None for it from bwd (custom_vjp `project` through "
     "the wrapper `mylib.shims.custom_vjp`, which calls `jax.custom_vjp` at mylib/shims.py:9)"),
    ("mylib/tools.py:37:12: VJP306 bwd `double_bwd` returns 1 cotangent but `double_vjp` has 2 differentiable "
     f"arguments (x, n); differentiating `double_vjp` {BWD_TYPEERROR} (custom_vjp `double_vjp` through the "
     "wrapper `mylib.shims.plain_vjp`, which calls `jax.custom_vjp` at mylib/shims.py:20)"),
]


def _concise(cwd: Path, *args: str) -> List[str]:
    proc = run_cli("check", "--output-format", "concise", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return [line.replace(" [*]", "") for line in proc.stdout.splitlines() if ": VJP" in line]


@pytest.mark.cli
def test_the_cli_reports_through_inferred_wrappers(tmp_path: Path) -> None:
    write_tree(tmp_path)
    assert _concise(tmp_path, "--no-cache", ".") == EXPECTED


def test_what_the_index_recognises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(write_tree(tmp_path))
    files = sorted(Path(".").rglob("*.py"))
    index = project.build_index(files, Config(), use_cache=False)
    found = {name: (c.kind, c.keyword, c.rules) for name, c in index.spellings.items()}
    assert {k: v for k, v in found.items() if not k.startswith("mylib.tools.")} == {
        "mylib.custom_vjp": ("vjp", "", (1, 2)),  # __init__: `from .fastmath import custom_vjp`
        "mylib.fastmath.custom_vjp": ("vjp", "", (1, 2)),  # fastmath/__init__: `from ...ops import *`
        "mylib.fastmath.ops.custom_vjp": ("vjp", "", (1, 2)),  # drops nondiff_argnums on the way
        "mylib.fastmath.jax_backend._custom_vjp": ("vjp", "nondiff_argnums", (1, 2)),
        "mylib.fastmath.ops.jax_backend._custom_vjp": ("vjp", "nondiff_argnums", (1, 2)),  # a module re-export
        "mylib.shims.custom_vjp": ("vjp", "static_argnums", ()),  # a class whose __init__ forwards
        "mylib.shims.plain_vjp": ("vjp", "", ()),
        "mylib.shims.differentiable": ("vjp", "", ()),
        "mylib.local.my_vjp": ("vjp", "", ()),
    }
    # Look-alikes: a function named custom_jvp that calls its argument, a function and a decorator
    # that make a custom_vjp of a fixed function.
    assert not any(name.endswith(("custom_jvp", "registered", "memoized")) for name in found)
    assert index.relative["mylib"][".shims.custom_vjp"] is index.spellings["mylib.shims.custom_vjp"]
    assert index.local["mylib.local"] == {"<self>.my_vjp": index.spellings["mylib.local.my_vjp"]}  # used there


def _age(root: Path) -> None:
    for path in root.rglob("*.py"):
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 3600 * 10**9))


def test_the_index_is_cached_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(write_tree(tmp_path))
    _age(tmp_path)
    reads: List[str] = []
    real_read = project._read
    monkeypatch.setattr(project, "_read", lambda path: reads.append(str(path)) or real_read(path))
    files = sorted(Path(".").rglob("*.py"))
    config = Config(cache_dir=str(tmp_path / "cache"))
    cold = project.build_index(files, config)
    assert len(reads) == len(files) == 9
    reads.clear()
    warm = project.build_index(files, config)
    assert reads == [] and warm.spellings == cold.spellings  # nothing read again
    shims = Path("mylib/shims.py")
    shims.write_text(shims.read_text().replace("return jax.custom_vjp(fun)",
                                               "return jax.custom_vjp(fun, nondiff_argnums=nondiff_argnums)"))
    changed = project.build_index(files, config)
    assert reads == ["mylib/shims.py"]
    assert changed.spellings["mylib.shims.plain_vjp"].keyword == "nondiff_argnums"


def _json(cwd: Path, *args: str) -> list:
    proc = run_cli("check", "--output-format", "json", "--exit-zero", *args, ".", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.cli
def test_results_are_identical_for_any_jobs_with_and_without_cache(tmp_path: Path) -> None:
    write_tree(tmp_path)
    reference = _json(tmp_path, "--no-cache", "--jobs", "1")
    assert [(d["filename"], d["code"]) for d in reference] == [
        ("mylib/layers.py", "VJP306"), ("mylib/local.py", "VJP306"), ("mylib/smooth.py", "VJP306"),
        ("mylib/tools.py", "VJP101"),
        ("mylib/tools.py", "VJP306")]
    for args in (("--no-cache", "--jobs", "2"), (), (), ("--jobs", "2")):  # cold cache, then warm
        assert _json(tmp_path, *args) == reference, args


@pytest.mark.cli
def test_a_changed_wrapper_changes_cached_results_elsewhere(tmp_path: Path) -> None:
    write_tree(tmp_path)
    assert _concise(tmp_path, ".") == EXPECTED  # fills the cache
    shims = tmp_path / "mylib" / "shims.py"
    shims.write_text(shims.read_text().replace("return jax.custom_vjp(fun)",
                                               "return jax.custom_vjp(fun, nondiff_argnums=nondiff_argnums)"))
    # tools.py and smooth.py are unchanged, but plain_vjp now passes nondiff_argnums on: their
    # one cotangent is right, their cached results must not be reused, and what is left is about
    # the nondiff argument each uses as an array (VJP102), and bwd's arity (VJP305).
    warm = _concise(tmp_path, ".")
    assert warm == _concise(tmp_path, "--no-cache", ".")
    assert [line.split(" ", 2)[:2] for line in warm] == [
        ["mylib/layers.py:16:12:", "VJP306"], ["mylib/local.py:21:12:", "VJP306"], ["mylib/smooth.py:4:13:", "VJP102"],
        ["mylib/smooth.py:15:5:", "VJP305"], ["mylib/tools.py:10:13:", "VJP101"],
        ["mylib/tools.py:36:5:", "VJP305"]]


@pytest.mark.cli
def test_pre_commit_runs_know_the_wrappers_of_the_files_they_are_given(tmp_path: Path) -> None:
    write_tree(tmp_path)
    assert b"custom_vjp" not in (tmp_path / "mylib" / "smooth.py").read_bytes()
    # The fast path declines (shims.py names custom_vjp), the full run finds the wrapper there.
    assert _concise(tmp_path, "mylib/smooth.py", "mylib/shims.py") == [EXPECTED[2]]
    # Alone, smooth.py holds no name of JAX's: both paths answer that there is nothing to check
    # (the wrapper is in a module this run does not include).
    fast = run_cli("check", "mylib/smooth.py", cwd=tmp_path)
    full = run_cli("check", "--output-format", "text", "mylib/smooth.py", cwd=tmp_path)
    assert (fast.returncode, fast.stdout) == (full.returncode, full.stdout) == (0, "All checks passed!\n")


CONFIRM = """\
import jax, jax.numpy as jnp
from mylib import layers, local, smooth, tools
def outcome(f, *args):
    try:
        f(*args)
        return "ok"
    except Exception as exc:
        return type(exc).__name__
print(outcome(jax.grad(lambda x: layers.scaled(2.0, x)), 3.0))
print(outcome(jax.grad(lambda x: layers.shifted(2.0, x)), 3.0))
print(outcome(jax.grad(lambda x: smooth.soft_vjp(x, 2.0)), 3.0))
print(outcome(jax.grad(lambda w: tools.project(w, jnp.ones(2)).sum()), jnp.ones((2, 2))))
print(outcome(jax.grad(lambda x: tools.double_vjp(x, 2.0)), 3.0))
print(outcome(jax.grad(lambda x: local.halved(x, 2.0)), 3.0))
"""


@pytest.mark.jax
def test_the_firing_cases_fail_on_jax(tmp_path: Path) -> None:
    import subprocess

    write_tree(tmp_path)
    env = {**os.environ, **JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", CONFIRM], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    # scaled (VJP306), shifted (silent: None for the dropped nondiff argument), soft_vjp (VJP306),
    # project (VJP101), double_vjp (VJP306), halved (VJP306)
    assert proc.stdout.split() == ["TypeError", "ok", "TypeError", "UnexpectedTracerError", "TypeError", "TypeError"]


@pytest.mark.server
async def test_the_server_uses_the_workspace_wrappers_and_refreshes_them_on_save(tmp_path: Path) -> None:
    from lsprotocol import types

    from tests.server.test_server import open_doc, published, start, stop

    write_tree(tmp_path)
    client = await start(tmp_path)
    try:
        tools = tmp_path / "mylib" / "tools.py"
        uri = open_doc(client, tools, tools.read_text())
        first = await published(client, uri, 1)
        assert [(d.code, d.range.start.line) for d in first] == [("VJP101", 9), ("VJP306", 36)]
        assert first[0].message == EXPECTED[3].split(" VJP101 ", 1)[1]
        # plain_vjp now passes nondiff_argnums on: saving shims.py re-lints the open tools.py. The
        # count is taken before the file changes: the workspace index, still reading the folder in
        # the background after the first lint, may read the new shims.py from disk and publish the
        # re-lint before the save is sent (a CI run waited for a second one that never came).
        count = len(client.published)  # type: ignore[attr-defined]
        shims = tmp_path / "mylib" / "shims.py"
        shims.write_text(shims.read_text().replace("return jax.custom_vjp(fun)",
                                                   "return jax.custom_vjp(fun, nondiff_argnums=nondiff_argnums)"))
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=shims.as_uri())))
        # the first publish after the save may be the old analysis sent again (the workspace
        # index's own re-check of the open document); the re-lint with the new wrappers follows
        after = await published(client, uri, 1, after=count,
                                where=lambda ds: [d.code for d in ds] != ["VJP101", "VJP306"])
        assert [(d.code, d.range.start.line) for d in after] == [("VJP101", 9), ("VJP305", 35)]
    finally:
        await stop(client)


PIECES = '''\
"""A module docstring that shows code:
def fake(f):
    return jax.custom_vjp(f)
"""
import jax


def with_custom_jvp(impl_fn, jvp_fn):
    @jax.custom_jvp
    def wrapped(*args, **kwargs):
        return impl_fn(*args, **kwargs)

    @wrapped.defjvp
    def wrapped_jvp(primals, tangents):
        return jvp_fn(primals, tangents)

    return wrapped


def fixed_rule(fn):
    @jax.custom_jvp
    def wrapped(*args):
        return fn(*args)

    @wrapped.defjvp
    def wrapped_jvp(primals, tangents):
        return primals[0], tangents[0]

    return wrapped
'''


def test_pieces_of_a_file_are_what_a_whole_parse_finds() -> None:
    from vjplint.model.wrappers import detect, detect_text

    found = detect_text(PIECES)
    # nufftax's factory: the jvp rule is a parameter; a rule of the wrapper's own is not a wrapper
    # of the user's rules (its Forward says so: rules None); the docstring's code is no function.
    assert {name: [(f.callee, f.rules, f.line) for f in fs] for name, fs in found.forwards.items()} == {
        "with_custom_jvp": [("jax.custom_jvp", (1,), 9)], "fixed_rule": [("jax.custom_jvp", None, 21)]}
    whole = detect(ast.parse(PIECES))
    assert found.forwards == whole.forwards and found.exports == whole.exports


DECORATED = '''\
import jax
import jax.numpy as jnp


@jax.custom_jvp
def nextafter(x):
    return jnp.nextafter(x, jnp.inf)


def make(fn):
    return jax.custom_vjp(fn)
'''


def test_a_function_whose_decorators_alone_name_a_creator_is_no_wrapper_piece() -> None:
    """`@jax.custom_jvp def nextafter(x): return jnp.nextafter(x, ...)` is a derivative: the
    pieces leave it out (the index parsed every decorated derivative of a test module before),
    though a whole parse records its forward to `jnp.nextafter` (which reaches no creator)."""
    from vjplint.model.wrappers import detect, detect_text

    found = detect_text(DECORATED)
    assert sorted(found.forwards) == ["make"]
    assert sorted(detect(ast.parse(DECORATED)).forwards) == ["make", "nextafter"]


# Two scripts named `ops.py` outside packages (both the module `ops`): a factory that registers
# its own rules, and one that forgets to. Each file is read with its own wrappers: the first stays
# silent, the second's unregistered custom_vjp is reported (once the later file's record replaced
# the earlier one's, and the correct factory was reported as unregistered: heldout4 eformer_ste).
_FACTORY = '''import jax


def ste(func):
    @jax.custom_vjp
    def wrapped(x):
        return func(x)

    def fwd(x):
        return func(x), None

    def bwd(_, g):
        return (g,)

{register}
    return wrapped


@ste
def rounded(x):
    return jax.numpy.round(x)


def use(x):
    return rounded(x)
'''


@pytest.mark.cli
def test_modules_of_the_same_name_keep_their_own_wrappers(tmp_path: Path) -> None:
    for folder, register in (("good", "    wrapped.defvjp(fwd, bwd)"), ("bad", "")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "ops.py").write_text(_FACTORY.format(register=register))
    for order in (("bad", "good"), ("good", "bad")):
        lines = _concise(tmp_path, "--no-cache", "--select", "VJP301", *(f"{f}/ops.py" for f in order))
        assert len(lines) == 1 and lines[0].startswith("bad/ops.py:19:2: VJP301 custom_vjp `rounded` is called (line 25)"), lines
        assert "through the wrapper `ops.ste`, which calls `jax.custom_vjp` at bad/ops.py:5" in lines[0], lines
    index = project.build_index([tmp_path / "good" / "ops.py", tmp_path / "bad" / "ops.py"], Config(), use_cache=False)
    assert index.renamed == {str(tmp_path / "bad" / "ops.py"): "ops#1"}
    assert set(index.local) == {"ops#1"}  # the factory that registers its rules is no wrapper
