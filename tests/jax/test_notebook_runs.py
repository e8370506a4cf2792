"""`vjplint check-grads` and `vjplint verify` run a notebook's code cells in cell order, as one
module (vjplint.syntax.notebook), magics and shell escapes skipped: real CLIs, real JAX on CPU, notebooks
written by nbformat. Findings and reports say the cell; the notebook is never written to."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tests.conftest import JAX_ENV, device_label, run_cli

CPU = JAX_ENV  # the CPU unless JAX_PLATFORMS names a lent accelerator


def _write(path: Path, *cells) -> Path:
    nbformat.write(new_notebook(cells=list(cells)), path)
    return path


def test_check_grads_runs_the_cells_in_order(tmp_path: Path) -> None:
    # The rule is registered two cells after the primal; a cell of its own defines the wrong bwd.
    nb = _write(tmp_path / "grads.ipynb",
                new_markdown_cell("# Square norm"),
                new_code_cell("!pip install -q jax\nimport jax\nimport jax.numpy as jnp"),
                new_code_cell("@jax.custom_vjp\ndef square_norm(x):\n    return jnp.sum(x ** 2)"),
                new_code_cell("%timeit 1\ndef square_norm_fwd(x):\n    return square_norm(x), x\n\n\n"
                              "def square_norm_bwd(x, g):\n    return (g * x,)  # WRONG: 2 * x * g"),
                new_code_cell("square_norm.defvjp(square_norm_fwd, square_norm_bwd)"),
                new_code_cell("@jax.custom_vjp\ndef cube(x):\n    return jnp.sum(x ** 3)\n\n\n"
                              "cube.defvjp(lambda x: (cube(x), x), lambda x, g: (3 * x ** 2 * g,))"))
    before = nb.read_bytes()
    proc = run_cli("check-grads", "--output-format", "json", ".", cwd=tmp_path, env=CPU, timeout=600)
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)
    assert [(d["filename"], d["cell"], d["code"], d["location"]["row"], d["location"]["column"]) for d in found] == [
        ("grads.ipynb", 3, "VJP501", 1, 2)]
    assert "`square_norm`: bwd cotangent for `x` differs from finite differences: max rel. error 0.5" in \
        found[0]["message"]
    assert "2 custom derivatives in 1 module" in proc.stderr and "0 passed, 1 failed, 1 at assumed inputs only (not counted as passed), 0 not checked" in proc.stderr
    text = run_cli("check-grads", "grads.ipynb", cwd=tmp_path, env=CPU, timeout=600)
    assert text.stdout.startswith("grads.ipynb:cell 3:1:2: VJP501 `square_norm`: bwd cotangent")
    assert nb.read_bytes() == before


def test_verify_runs_the_notebook_and_its_rewrite(tmp_path: Path) -> None:
    nb = _write(tmp_path / "fixme.ipynb",
                new_markdown_cell("# Scale"),
                new_code_cell("%matplotlib inline\nfrom functools import partial\n\nimport jax\nimport jax.numpy as jnp"),
                new_code_cell("@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef scale(w, x):\n    return w * x\n\n\n"
                              "def scale_fwd(w, x):\n    return w * x, None\n\n\ndef scale_bwd(w, _, g):\n"
                              "    return (w * g,)"),
                new_code_cell("scale.defvjp(scale_fwd, scale_bwd)\ny = scale(jnp.ones(3), jnp.ones(3))"))
    before = nb.read_bytes()
    proc = run_cli("verify", "--unsafe-fixes", "--output-format", "json", "fixme.ipynb", cwd=tmp_path, env=CPU,
                   timeout=600)
    assert proc.returncode == 0, proc.stderr
    [report] = json.loads(proc.stdout)
    assert (report["filename"], report["function"], report["cell"], report["line"], report["status"],
            report["moved"]) == ("fixme.ipynb", "scale", 3, 1, "verified", ["w"])
    assert report["hazard"]["status"] == "confirmed"
    assert [i["source"] for i in report["inputs"]] == ["call site, cell 4, line 2"] * 2  # `scale(jnp.ones(3), ...)`
    text = run_cli("verify", "--unsafe-fixes", "-q", "fixme.ipynb", cwd=tmp_path, env=CPU, timeout=600)
    assert text.stdout.splitlines()[0].startswith(f"fixme.ipynb:cell 3:1: scale: verified on {device_label()}")
    assert nb.read_bytes() == before
