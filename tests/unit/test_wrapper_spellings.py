"""More spellings of project-local wrappers (vjplint.model.wrappers, vjplint.project.index, vjplint.facts.collect):
a class whose `__call__` forwards to `jax.custom_vjp`/`custom_jvp` (its instances are the
wrappers: `shim = Shim()`, `@Shim(static_argnums=...)`), annotated re-exports
(`custom_vjp: Callable[..., Any] = jax.custom_vjp`, tjax's style) and definitions made by an
annotated assignment (`method_jvp: Any = custom_jvp_method(method, ...)`, tjax's
`abstract_method_decorators.py`), with look-alikes that stay silent.
Every firing case is confirmed on JAX (test_the_firing_cases_fail_on_jax)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from tests.conftest import JAX_ENV, pythonpath, run_cli
from vjplint.project import index as project
from vjplint.settings.config import Config

FILES = {
    "shimlib/__init__.py": "from .makers import VjpMaker, make_jvp\n",
    "shimlib/makers.py": '''\
        from typing import Any, Callable

        import jax


        class VjpMaker:
            """`VjpMaker(static_argnums=...)` is a decorator: its `__call__` forwards."""

            def __init__(self, static_argnums=()):
                self.static_argnums = static_argnums

            def __call__(self, fun):
                return jax.custom_vjp(fun, nondiff_argnums=self.static_argnums)


        class JvpFactory:
            def __call__(self, fun, nondiff_argnums=()):
                return jax.custom_jvp(fun, nondiff_argnums=nondiff_argnums)


        class Caller:
            """Not a wrapper: its `__call__` calls the function it is given."""

            def __call__(self, fun, *args):
                return fun(*args)


        make_jvp = JvpFactory()
        plain_vjp: Callable[..., Any] = jax.custom_vjp  # an annotated re-export of JAX's own
        run = Caller()
        ''',
    "shimlib/methods.py": '''\
        from typing import Any

        import jax


        class custom_jvp_method:
            """Like tjax's: `__init__` forwards, `__call__` only calls what `__init__` made."""

            def __init__(self, func, *, nondiff_argnums=()):
                self.jvp = jax.custom_jvp(func, nondiff_argnums=nondiff_argnums)

            def defjvp(self, jvp):
                self.jvp.defjvp(jvp)

            def __call__(self, u, *args):
                return self.jvp(u, *args)


        def scale(x, k):
            return x * k


        def scale_rule(k, primals, tangents):
            (x,), (t,) = primals, tangents
            return x * k, t * k


        def scale_rule_short(primals, tangents):
            (x, k), (t, _) = primals, tangents
            return x * k, t * k


        def build():
            scaled: Any = custom_jvp_method(scale, nondiff_argnums=(1,))
            scaled.defjvp(scale_rule)
            short: Any = custom_jvp_method(scale, nondiff_argnums=(1,))
            short.defjvp(scale_rule_short)
            return scaled, short
        ''',
    "shimlib/use.py": '''\
        import jax.numpy as jnp

        from shimlib import VjpMaker, make_jvp
        from shimlib.makers import plain_vjp, run


        @VjpMaker(static_argnums=(0,))
        def project(w, x):
            return x


        def project_fwd(w, x):
            return x, None


        def project_bwd(w, _, g):
            return (jnp.dot(w, g),)


        project.defvjp(project_fwd, project_bwd)


        def double(x, n):
            return x * n


        double_jvp = make_jvp(double, nondiff_argnums=(1,))


        @double_jvp.defjvp
        def double_rule(primals, tangents):
            (x, n), (t, _) = primals, tangents
            return x * n, t * n


        @plain_vjp
        def cube(x):
            return x ** 3


        def cube_fwd(x):
            return x ** 3, x


        def cube_bwd(x, g):
            return (3 * x ** 2 * g,)


        cube.defvjp(cube_fwd, cube_bwd)
        ran = run(jnp.sin, 1.0)
        ''',
}


def write_tree(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_what_the_index_recognises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(write_tree(tmp_path))
    index = project.build_index(sorted(Path(".").rglob("*.py")), Config(), use_cache=False)
    found = {name: (c.kind, c.keyword, c.rules) for name, c in index.spellings.items() if not c.exact}
    assert found == {
        "shimlib.makers.VjpMaker()": ("vjp", "static_argnums", ()),  # the constructor's keyword
        "shimlib.VjpMaker()": ("vjp", "static_argnums", ()),  # re-exported class
        "shimlib.makers.JvpFactory()": ("jvp", "nondiff_argnums", ()),
        "shimlib.makers.make_jvp": ("jvp", "nondiff_argnums", ()),  # an instance
        "shimlib.make_jvp": ("jvp", "nondiff_argnums", ()),
        "shimlib.methods.custom_jvp_method": ("jvp", "nondiff_argnums", ()),
    }
    # The annotated re-export is JAX's own creator; Caller's `__call__` is no wrapper.
    assert index.spellings["shimlib.makers.plain_vjp"].exact
    assert not any("Caller" in name or name.endswith(".run") for name in index.spellings)
    assert index.local["shimlib.makers"]["<self>.VjpMaker()"] is index.spellings["shimlib.makers.VjpMaker()"]


def test_pieces_keep_the_classes_whose_call_forwards() -> None:
    import ast

    from vjplint.model.wrappers import detect, detect_text

    text = textwrap.dedent(FILES["shimlib/makers.py"])
    pieces, whole = detect_text(text), detect(ast.parse(text))
    assert pieces.forwards == whole.forwards and pieces.exports == whole.exports
    assert sorted(pieces.forwards) == ["JvpFactory()", "VjpMaker()"]
    assert pieces.exports["make_jvp"] == "<self>.JvpFactory()"
    assert pieces.exports["plain_vjp"] == "jax.custom_vjp"


def _via(name: str, kind: str, wrapper: str, where: str) -> str:
    return f"(custom_{kind} `{name}` through {wrapper}, which calls `jax.custom_{kind}` at {where})"


def _jvp312(rule: str, name: str, nondiff: str, via: str) -> str:
    return (f"VJP312 jvp rule `{rule}` of custom_jvp `{name}` takes 2 positional parameters (primals, tangents), "
            f"but JAX calls it with 3 positional arguments ({nondiff}, primals, tangents) (the nondiff values first, "
            f"in index order), so differentiating `{name}` (jvp, grad, jacfwd) raises `TypeError: {rule}() takes 2 "
            f"positional arguments but 3 were given`; give it the parameters ({nondiff}, primals, tangents) {via}")


EXPECTED = [
    "shimlib/methods.py:28:5: " + _jvp312("scale_rule_short", "short", "k", _via(
        "short", "jvp", "the wrapper `shimlib.methods.custom_jvp_method`", "shimlib/methods.py:10")),
    ("shimlib/use.py:8:13: VJP101 `w` (position 0) is in nondiff_argnums but is used as an array: "
     "`jnp.dot(w, g)`; a traced value here raises UnexpectedTracerError under jit, vmap or grad. Pass it as a "
     "regular argument, save it in the residuals and return None for it from bwd "
     + _via("project", "vjp", "an instance of `shimlib.makers.VjpMaker`, whose `__call__`",
            "shimlib/makers.py:13").replace(", which calls", " calls")),
    "shimlib/use.py:31:5: " + _jvp312("double_rule", "double_jvp", "n", _via(
        "double_jvp", "jvp", "an instance of `shimlib.makers.JvpFactory`, whose `__call__`",
        "shimlib/makers.py:18").replace(", which calls", " calls")),
]


def _concise(cwd: Path, *args: str) -> List[str]:
    proc = run_cli("check", "--output-format", "concise", "--no-cache", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return [line.replace(" [*]", "") for line in proc.stdout.splitlines() if ": VJP" in line]


@pytest.mark.cli
def test_the_cli_reports_through_these_wrappers(tmp_path: Path) -> None:
    write_tree(tmp_path)
    assert _concise(tmp_path, ".") == EXPECTED


CONFIRM = """\
import jax, jax.numpy as jnp
from shimlib import methods, use
def outcome(f, *args):
    try:
        f(*args)
        return "ok"
    except Exception as exc:
        return type(exc).__name__
scaled, short = methods.build()
print(outcome(jax.grad(lambda x: scaled(x, 2.0)), 3.0))
print(outcome(jax.grad(lambda x: short(x, 2.0)), 3.0))
print(outcome(jax.jit(jax.grad(lambda w: use.project(w, jnp.ones(2)).sum())), jnp.ones((2, 2))))
print(outcome(jax.grad(lambda x: use.double_jvp(x, 2.0)), 3.0))
print(outcome(jax.grad(use.cube), 3.0))
"""


@pytest.mark.jax
def test_the_firing_cases_fail_on_jax(tmp_path: Path) -> None:
    write_tree(tmp_path)
    env = {**os.environ, **JAX_ENV, "PYTHONPATH": pythonpath(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", CONFIRM], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    # scaled (silent), short (VJP312), project (VJP101), double_jvp (VJP312), cube (silent)
    assert proc.stdout.split() == ["ok", "TypeError", "UnexpectedTracerError", "TypeError", "ok"]
