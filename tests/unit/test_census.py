"""benchmarks/census.py on a tree written here: exact census and recognised counts per spelling."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from dataclasses import asdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CENSUS = ROOT / "benchmarks" / "census.py"

SPELLINGS = '''\
import functools
from functools import partial
import jax
from jax import custom_vjp  # custom_vjp in a comment is no definition
from jax import (custom_jvp,
                 custom_gradient)
import equinox as eqx
import tensorflow as tf
from flax import nnx


@jax.custom_vjp
def f(x):
    return x
def f_fwd(x):
    return x, None
def f_bwd(res, g):
    return (g,)
f.defvjp(f_fwd, f_bwd)


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def g(n, x):
    return x


h = jax.custom_vjp(lambda x: x)


@nnx.custom_vjp
def k(m, x):
    return x


@eqx.filter_custom_vjp
def e(vjp_arg):
    return vjp_arg


@jax.custom_gradient
def cg(x):
    return x, lambda g: g


@tf.custom_gradient
def tf_only(x):
    return x, lambda g: g


class C:
    def __init__(self):
        self.fn = jax.custom_jvp(self._fn)

    def _fn(self, x):
        return x


def doc():
    """@jax.custom_vjp in a docstring"""
    s = "jax.custom_vjp(f)"
    return isinstance(f, jax.custom_vjp), s
'''

MULTILINE = '''\
import functools
import jax


@functools.partial(
    jax.custom_vjp,
    nondiff_argnums=(1,),
)
def m(x, n):
    return x


def my_wrapper(fn, nondiff_argnums=()):
    return jax.custom_vjp(fn, nondiff_argnums=nondiff_argnums)


my_vjp = functools.partial(jax.custom_vjp, nondiff_argnums=(0,))


def custom_jvp(fn):
    return fn
'''


def load_census():
    spec = importlib.util.spec_from_file_location("census", CENSUS)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["census"] = module  # dataclasses resolve string annotations through sys.modules
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def run_census(tree: Path, *extra: str) -> dict:
    """In process (unit layer): the report as `--json` would print it."""
    census = load_census()
    names = tuple(dict.fromkeys([*census.NAMES, *extra]))
    report = census.census_tree(tree, names)
    return {**asdict(report), "ratio": report.ratio, "definitions_ratio": report.definitions_ratio}


def write_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "proj"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "spellings.py").write_text(SPELLINGS)
    (tree / "pkg" / "multiline.py").write_text(MULTILINE)
    (tree / "pkg" / "plain.py").write_text("x = 1\n")
    return tree


def test_counts_and_unrecognised_spellings(tmp_path: Path) -> None:
    report = run_census(write_tree(tmp_path))
    assert report["files"] == 3
    # f, g, h, k, e, cg, C.fn, m, my_wrapper's call, my_vjp; not tf_only, imports, comments, strings, defs
    assert report["census"] == 10
    # every definition: f, g, h, k (nnx), e (equinox), cg (custom_gradient), C.fn (a bound method),
    # m (the multi-line partial spans its hit); not the wrapper's internal call or the stored partial
    assert report["recognised"] == 8
    assert (report["definitions"], report["definitions_recognised"]) == (8, 8)
    assert report["beyond_census"] == 0
    assert report["parse_failures"] == []
    unrecognised = [(h["path"], h["line"], h["form"], h["spelling"]) for h in report["unrecognised"]
                    if h["path"] == "pkg/spellings.py"]
    assert unrecognised == []
    assert [(h["line"], h["role"]) for h in report["unrecognised"] if h["role"] != "definition"] == [
        (14, "wrapper-internal"), (17, "alias")]
    assert report["ratio"] == 0.8 and report["definitions_ratio"] == 1.0


@pytest.mark.cli
def test_cli_json_and_text_output_with_an_extra_name(tmp_path: Path) -> None:
    tree = write_tree(tmp_path)
    (tree / "pkg" / "shim.py").write_text(textwrap.dedent('''\
        from mylib import shims

        @shims.my_custom_vjp(static_argnums=(0,))
        def s(n, x):
            return x
        '''))
    def cli(*args: str) -> str:
        return subprocess.run([sys.executable, str(CENSUS), *args, str(tree)], capture_output=True, text=True,
                              check=True, cwd=ROOT).stdout

    assert json.loads(cli("--json"))["census"] == 10
    report = json.loads(cli("--json", "--name", "my_custom_vjp"))
    assert report["census"] == 11 and report["recognised"] == 8
    assert report["unrecognised"][2]["spelling"] == "@shims.my_custom_vjp"
    text = cli().splitlines()
    assert text[0] == ("== proj: 4 files, census 10, recognised 8, ratio 80.0%, beyond census 0; definitions 8, "
                       "recognised 8, ratio 100.0%; registrations 1, of no recognised definition 0")
    assert text[1:3] == ["   pkg/multiline.py:14: jax.custom_vjp( [call, wrapper-internal]",
                         "   pkg/multiline.py:17: functools.partial(jax.custom_vjp [partial, alias]"]


ORPHANS = '''\
import jax
from jax.interpreters import ad

from mylib import make_differentiable  # no creator name: the census of names misses it

scaled = make_differentiable(lambda w, x: w * x)
scaled.defvjp(lambda w, x: (w * x, w), lambda w, g: (None, w * g))


@jax.custom_vjp
def f(x):
    return x


f.defvjp(lambda x: (x, None), lambda _, g: (g,))
ad.defjvp(prim, lambda g, x: g)  # a primitive's rule, not a custom derivative


class custom_thing:
    def defvjp(self, fwd, bwd):
        self.inner.defvjp(fwd, bwd)  # the API's own implementation
'''


def test_registrations_of_no_recognised_definition_and_notebooks(tmp_path: Path) -> None:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    tree = tmp_path / "proj"
    tree.mkdir()
    (tree / "orphans.py").write_text(ORPHANS)
    # In a notebook a name is defined again in a later cell: each defvjp registers the last one.
    cells = [new_code_cell("import jax\n\n@jax.custom_jvp\ndef f(x):\n    return x"),
             new_code_cell("%timeit 1\n@jax.custom_vjp\ndef f(x):\n    return x\n\n\n"
                           "f.defvjp(lambda x: (x, None), lambda _, g: (g,))")]
    nbformat.write(new_notebook(cells=cells), tree / "nb.ipynb")
    report = run_census(tree)
    assert report["files"] == 2 and report["census"] == 3 and report["recognised"] == 3
    assert report["registrations"] == 4  # not `ad.defjvp`
    assert [(h["path"], h["line"], h["spelling"], h["role"]) for h in report["orphans"]] == [
        ("orphans.py", 7, "scaled.defvjp(", "definition"),
        ("orphans.py", 21, "self.inner.defvjp(", "wrapper-internal")]
