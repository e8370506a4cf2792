"""The residual-plus-None rewrite through the real CLI (`check --fix --unsafe-fixes` on files on
disk) on the spellings its one writer (vjplint.fixes.residual_text) took over from libcst:
comments inside the changed code, statements sharing a line (`a; b`, a body on the def line),
`\\r\\n` and `\\r` line endings, async rules. Each result is exact (bytes), parses, and a second
run changes nothing; the file is replaced whole (no temporary file is left beside it)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tests.conftest import run_cli

SOURCE = '''from functools import partial

import jax
import jax.numpy as jnp


@partial(
    jax.custom_vjp,  # the rule
    nondiff_argnums=(1, 2),  # w and b were constants
)
def f(x, w: jax.Array, b: jax.Array):
    return jnp.sin(x) * w + b


def f_fwd(x, w, b):
    """Forward."""
    return f(x, w, b), jnp.cos(x)


def f_bwd(w, b, cos_x, g):
    # cotangents
    return (
        g * cos_x * w,  # d/dx
    )


f.defvjp(f_fwd, f_bwd)
'''

FIXED = '''import jax
import jax.numpy as jnp


# the rule
# w and b were constants
@jax.custom_vjp
def f(x, w: jax.Array, b: jax.Array):
    return jnp.sin(x) * w + b


def f_fwd(x, w, b):
    """Forward."""
    return f(x, w, b), (jnp.cos(x), w, b)


def f_bwd(res, g):
    cos_x, w, b = res
    # cotangents
    return (
        g * cos_x * w,  # d/dx
        None,  # noqa: VJP602
        None,  # noqa: VJP602
    )


f.defvjp(f_fwd, f_bwd)
'''

SHARED_LINES = (SOURCE.replace("from functools import partial\n", "from functools import partial; import os\n")
                .replace("    return f(x, w, b), jnp.cos(x)\n", "    y = f(x, w, b); return y, jnp.cos(x)\n")
                .replace("def f_bwd(w, b, cos_x, g):\n    # cotangents\n    return (\n        g * cos_x * w,  # d/dx\n    )\n",
                         "def f_bwd(w, b, cos_x, g): return (g * cos_x * w,)  # d/dx\n"))
SHARED_LINES_FIXED = (FIXED.replace("import jax\nimport jax.numpy", "import os\n\nimport jax\nimport jax.numpy")
                      .replace("    return f(x, w, b), (jnp.cos(x), w, b)\n",
                               "    y = f(x, w, b); return y, (jnp.cos(x), w, b)\n")
                      .replace("    # cotangents\n    return (\n        g * cos_x * w,  # d/dx\n        None,  # noqa: VJP602\n"
                               "        None,  # noqa: VJP602\n    )\n",
                               "    return (g * cos_x * w, None, None)  # d/dx  # noqa: VJP602\n"))
BOUND_BESIDE = SOURCE.replace("    # cotangents\n    return (\n        g * cos_x * w,  # d/dx\n    )\n",
                              "    pass; return tuple([g * cos_x * w])  # d/dx\n")
BOUND_BESIDE_FIXED = FIXED.replace(
    "    # cotangents\n    return (\n        g * cos_x * w,  # d/dx\n        None,  # noqa: VJP602\n        None,  # noqa: VJP602\n    )\n",
    "    pass; cts = tuple([g * cos_x * w]); return (cts[0], None, None)  # d/dx  # noqa: VJP602\n")


def _fix(tmp_path: Path, data: bytes) -> bytes:
    target = tmp_path / "ops.py"
    target.write_bytes(data)
    proc = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "ops.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Fixed 2 problems." in proc.stdout, proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ops.py"]  # written in place, whole
    fixed = target.read_bytes()
    ast.parse(fixed)
    again = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "ops.py", cwd=tmp_path)
    assert again.returncode == 0 and target.read_bytes() == fixed, again.stdout  # nothing more to do
    return fixed


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_comments_inside_the_changed_code_in_every_line_ending(tmp_path: Path, ending: str) -> None:
    """The comments of the removed nondiff keyword and of the decorator's arguments go above the
    collapsed decorator, in order; the returned tuple's end-of-line comment stays with its item
    and the new `None`s go below it; the inserted unpacking line has the file's line ending."""
    assert _fix(tmp_path, SOURCE.replace("\n", ending).encode()) == FIXED.replace("\n", ending).encode()


def test_statements_sharing_a_line(tmp_path: Path) -> None:
    """`from functools import partial; import os`: the import goes with its `;`; fwd's
    `y = ...; return y, r` keeps its line; a bwd body on the def line becomes a block at the
    file's indentation, its unpacking first."""
    assert _fix(tmp_path, SHARED_LINES.encode()) == SHARED_LINES_FIXED.encode()


def test_a_bound_return_sharing_a_line(tmp_path: Path) -> None:
    """`pass; return tuple([...])`: the returned call is bound before the `return`, on its line."""
    assert _fix(tmp_path, BOUND_BESIDE.encode()) == BOUND_BESIDE_FIXED.encode()


def test_async_rules(tmp_path: Path) -> None:
    source = SOURCE.replace("def f_fwd", "async def f_fwd").replace("def f_bwd", "async def f_bwd")
    expected = FIXED.replace("def f_fwd", "async def f_fwd").replace("def f_bwd", "async def f_bwd")
    assert _fix(tmp_path, source.encode()) == expected.encode()


COMMENT_LINES = (SOURCE.replace("@partial(\n    jax.custom_vjp,", "@partial(\n    # the creator\n    jax.custom_vjp,\n")
                 .replace("    return (\n        g * cos_x * w,  # d/dx\n    )\n",
                          "    return (\n        # the cotangent of x\n        g * cos_x * w,  # d/dx\n"
                          "        # (w and b had none)\n    )\n")
                 .replace("def f_bwd(w, b, cos_x, g):",
                          "def f_bwd(\n    w,  # the weight\n    # then\n    b,\n    cos_x,  # the residual\n    g,\n):"))
COMMENT_LINES_FIXED = (FIXED.replace("# the rule\n", "# the creator\n# the rule\n")
                       .replace("def f_bwd(res, g):\n", "# the weight\n# then\ndef f_bwd(\n    res,  # the residual\n    g,\n):\n")
                       .replace("    return (\n        g * cos_x * w,  # d/dx\n",
                                "    return (\n        # the cotangent of x\n        g * cos_x * w,  # d/dx\n")
                       .replace("        None,  # noqa: VJP602\n    )\n",
                                "        None,  # noqa: VJP602\n        # (w and b had none)\n    )\n"))


def test_comment_lines_between_items(tmp_path: Path) -> None:
    """Comment lines among the decorator's arguments, bwd's parameters and the returned tuple's
    items: those of removed parameters move above the def (libcst dropped them), the new `None`s
    do not copy the comment after the opening bracket (libcst wrote it again before each)."""
    assert _fix(tmp_path, COMMENT_LINES.encode()) == COMMENT_LINES_FIXED.encode()
