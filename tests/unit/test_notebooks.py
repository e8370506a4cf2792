"""Jupyter notebooks: real `.ipynb` files written by nbformat, linted and fixed by the real CLI
(vjplint.syntax.notebook): cells concatenated in order, magics blanked, positions as (cell, row), fixes
written back into the cells they change and nowhere else."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from tests.conftest import FIXTURES, run_cli
from vjplint.syntax import notebook
from vjplint.batch.cache import _allowed, decode, encode
from vjplint.diagnostics import Diagnostic, Position, Severity

NOTEBOOKS = FIXTURES / "notebooks"
ACROSS = NOTEBOOKS / "custom_vjp_across_cells.ipynb"
VJP307 = ("custom_vjp_across_cells.ipynb:cell 4:6:12: VJP307 [*] bwd `log_cosh_bwd` returns `g * jnp.tanh(x)` "
          "(an array), not a tuple: JAX needs a tuple or list with one cotangent (or None) per differentiable "
          "argument of `log_cosh` (x), and differentiating `log_cosh` raises `TypeError: Custom VJP bwd rule "
          "must produce an output with the same container (pytree) structure as the args tuple of the primal "
          "function ...`; return `(g * jnp.tanh(x),)`")


def _write(path: Path, *cells) -> Path:
    nbformat.write(new_notebook(cells=list(cells)), path)
    return path


# -- reading (unit) -----------------------------------------------------------------------------------
def test_code_cells_are_one_module_with_magics_blanked():
    source = notebook.read(ACROSS.read_bytes())
    assert source.cells == (2, 3, 4, 5, 7)  # markdown (1) and %%bash (6) are not Python
    assert source.text.splitlines()[:7] == [
        "# %% vjplint: cell 2", "pass  # vjplint: magic 0", "pass  # vjplint: magic 1", "import jax",
        "import jax.numpy as jnp", "# %% vjplint: cell 3", "@jax.custom_vjp"]
    assert source.magics == ("!pip install -q jax", "%matplotlib inline", "%%timeit", "files = !ls", "log_cosh?")
    compile(source.text, "nb", "exec")  # the text parses


@pytest.mark.parametrize("cell, python", [
    # a `%` or `!` inside brackets or a triple-quoted string is Python, not a magic
    ("x = (a\n     % b)\ny = (x\n     != 1)", ["x = (a", "     % b)", "y = (x", "     != 1)"]),
    ('doc = """\n%d items\n"""\n%time f()', ['doc = """', "%d items", '"""', "pass  # vjplint: magic 0"]),
    # a shell escape in a block keeps the block valid; a backslash continues a magic
    ("for i in range(3):\n    !echo $i\n%timeit -n 1 \\\n  f(i)", [
        "for i in range(3):", "    pass  # vjplint: magic 0", "pass  # vjplint: magic 1", "pass  # vjplint: magic 2"]),
    ("%%capture out\nprint(1)", ["pass  # vjplint: magic 0", "print(1)"]),
    ("for i in x:\n    %timeit \\\n        f(i)\n    y = 1", [
        "for i in x:", "    pass  # vjplint: magic 0", "    pass  # vjplint: magic 1", "    y = 1"]),
    ("x = 10 % 3\ny = x if x != 1 else 2", ["x = 10 % 3", "y = x if x != 1 else 2"]),
    # automagic: a magic without its `%` (JAX's cloud_tpu_colabs/JAX_demo.ipynb), not `time = 3`
    ("timeit -n 5 -r 5 f(x)\ntime = 3\npip install -q jax", [
        "pass  # vjplint: magic 0", "time = 3", "pass  # vjplint: magic 1"]),
])
def test_magic_detection(cell, python):
    data = nbformat.writes(new_notebook(cells=[new_code_cell(cell)])).encode()
    source = notebook.read(data)
    assert source.text.splitlines()[1:] == python
    compile(source.text, "cell", "exec")


def test_cell_magics_that_are_not_python_and_other_languages_are_left_out():
    data = nbformat.writes(new_notebook(cells=[new_code_cell("%%bash\necho hi"), new_code_cell("%%writefile a.py\nx")]))
    assert notebook.read(data.encode()).text == ""
    r = new_notebook(cells=[new_code_cell("library(jax)")], metadata={"kernelspec": {"display_name": "R", "language": "R", "name": "ir"}})
    assert notebook.read(nbformat.writes(r).encode()).cells == ()


def test_rows_map_back_to_cells():
    lines = notebook.read(ACROSS.read_bytes()).text.splitlines()
    cells = notebook.CellMap.of(lines)
    row = lines.index("    return g * jnp.tanh(x)") + 1
    assert cells.locate(row) == (4, 6)
    assert cells.cell_lines(lines, 4)[5] == "    return g * jnp.tanh(x)"
    d = Diagnostic("VJP307", "bwd-return-not-tuple", "m", Severity.ERROR, "nb.ipynb", Position(row, 12),
                   Position(row, 27), noqa_row=row)
    (mapped,) = notebook.to_cells([d], cells)
    assert (mapped.cell, mapped.location, mapped.end_location, mapped.noqa_row) == (
        4, Position(6, 12), Position(6, 27), 6)


def test_the_cache_round_trips_the_cell():
    d = Diagnostic("VJP307", "n", "m", Severity.ERROR, "nb.ipynb", Position(6, 12), Position(6, 27), cell=4)
    assert decode(json.loads(json.dumps(encode([d]))), _allowed()) == [d]


# -- writing (unit) -----------------------------------------------------------------------------------
def test_unchanged_text_writes_nothing_and_one_changed_cell_changes_only_its_source():
    data = ACROSS.read_bytes()
    source = notebook.read(data)
    assert notebook.cells_of(source.text, source) == {}
    assert notebook.write(data, {}) == data
    new_text = source.text.replace("    return g * jnp.tanh(x)", "    return (g * jnp.tanh(x),)")
    changed = notebook.cells_of(new_text, source)
    assert list(changed) == [4]
    out = notebook.write(data, changed)
    assert out == data.replace(b'"    return g * jnp.tanh(x)\\n"', b'"    return (g * jnp.tanh(x),)\\n"')


@pytest.mark.parametrize("indent, ensure_ascii", [(1, False), (2, False), (4, True)])
def test_layouts_are_kept(indent, ensure_ascii):
    nb = new_notebook(cells=[new_code_cell("x = 'µ'\ny = 2"), new_markdown_cell("text")])
    nb.cells[0].source = ["x = 'µ'\n", "y = 2"]  # as stored on disk
    data = (json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + "\n").encode()
    source = notebook.read(data)
    out = notebook.write(data, notebook.cells_of(source.text.replace("y = 2", "y = 3\nz = 4"), source))
    expected = copy.deepcopy(nb)
    expected.cells[0].source = ["x = 'µ'\n", "y = 3\n", "z = 4"]
    assert out.decode() == json.dumps(expected, indent=indent, ensure_ascii=ensure_ascii) + "\n"


def test_line_breaks_are_python_s_and_a_cell_s_own_are_kept():
    cells = [new_code_cell("a = 1\r\nb = 2\r\n"), new_code_cell("s = 'x\u2028y\x0cz'\nt = 3")]
    data = nbformat.writes(new_notebook(cells=cells)).encode()
    source = notebook.read(data)
    assert source.text.split("\n") == ["# %% vjplint: cell 1", "a = 1", "b = 2", "# %% vjplint: cell 2",
                                       "s = 'x\u2028y\x0cz'", "t = 3", ""]
    assert notebook.cells_of(source.text, source) == {}
    changed = notebook.cells_of(source.text.replace("b = 2", "b = 5").replace("t = 3", "t = 4"), source)
    assert changed == {1: "a = 1\r\nb = 5\r\n", 2: "s = 'x\u2028y\x0cz'\nt = 4"}


def test_a_string_source_stays_a_string():
    data = b'{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": "a = 1\\nb = 2"}],\n' \
           b' "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    source = notebook.read(data)
    out = notebook.write(data, notebook.cells_of(source.text.replace("b = 2", "b = 3"), source))
    assert out == data.replace(b"b = 2", b"b = 3")


def test_a_fix_that_loses_a_magic_or_a_cell_boundary_is_refused():
    source = notebook.read(ACROSS.read_bytes())
    with pytest.raises(notebook.NotebookError, match="magic"):
        notebook.cells_of(source.text.replace("pass  # vjplint: magic 1\n", ""), source)
    with pytest.raises(notebook.NotebookError, match="cell boundaries"):
        notebook.cells_of(source.text.replace("# %% vjplint: cell 4\n", ""), source)


# -- the CLI ------------------------------------------------------------------------------------------
@pytest.fixture
def copied(tmp_path: Path) -> Path:
    for path in NOTEBOOKS.glob("*.ipynb"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


@pytest.mark.cli
def test_notebooks_are_discovered_and_reported_by_cell(copied: Path):
    proc = run_cli("--no-cache", "--output-format", "concise", ".", cwd=copied)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert proc.stdout == VJP307 + "\nFound 1 problem (1 fixable with --fix).\n"
    full = run_cli("--select", "VJP307", ".", cwd=copied)  # the cache writes; the excerpt is the cell's line
    again = run_cli("--select", "VJP307", ".", cwd=copied)  # read from the cache
    for proc in (full, again):
        assert "\n   6 |     return g * jnp.tanh(x)\n     |            ^^^^^^^^^^^^^^^\n" in proc.stdout


@pytest.mark.cli
def test_json_and_sarif_carry_the_cell(copied: Path):
    (item,) = json.loads(run_cli("--no-cache", "--output-format", "json", ".", cwd=copied).stdout)
    assert (item["cell"], item["location"], item["end_location"], item["noqa_row"]) == (
        4, {"row": 6, "column": 12}, {"row": 6, "column": 27}, 6)
    assert item["fix"]["edits"] == [{"content": "(g * jnp.tanh(x),)", "location": {"row": 6, "column": 12},
                                     "end_location": {"row": 6, "column": 27}}]
    sarif = json.loads(run_cli("--no-cache", "--output-format", "sarif", ".", cwd=copied).stdout)
    (result,) = sarif["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 6, "startColumn": 12, "endLine": 6, "endColumn": 27, "properties": {"cell": 4}}
    assert "fixes" not in result  # a notebook's edits are not replacements of the file's lines


@pytest.mark.cli
def test_fix_rewrites_only_the_cell_it_must_and_round_trips(copied: Path):
    path = copied / ACROSS.name
    before = path.read_bytes()
    proc = run_cli("--no-cache", "--fix", ".", cwd=copied)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "Fixed 1 problem.\n", "")
    assert path.read_bytes() == before.replace(b'"    return g * jnp.tanh(x)\\n"', b'"    return (g * jnp.tanh(x),)\\n"')
    nbformat.validate(nbformat.read(path, as_version=4))
    assert (copied / "clean.ipynb").read_bytes() == (NOTEBOOKS / "clean.ipynb").read_bytes()
    again = run_cli("--no-cache", "--fix", ".", cwd=copied)
    assert (again.returncode, again.stdout) == (0, "All checks passed!\n")
    assert [p.name for p in copied.iterdir() if "vjplint-tmp" in p.name] == []


@pytest.mark.cli
def test_a_module_fix_moves_lines_across_cells_and_keeps_magics(tmp_path: Path):
    path = _write(tmp_path / "project.ipynb",
                  new_code_cell("import functools\n\nimport jax\nimport jax.numpy as jnp\n%load_ext autoreload"),
                  new_markdown_cell("The rule:"),
                  new_code_cell("@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
                                "def project(x, basis: jax.Array):\n    return basis @ x"),
                  new_code_cell("def project_fwd(x, basis):\n    return project(x, basis), None\n\n\n"
                                "def project_bwd(basis, _, ct):\n    return (basis.T @ ct,)\n\n\n"
                                "project.defvjp(project_fwd, project_bwd)\n!echo ok"))
    before = nbformat.read(path, as_version=4)
    check = run_cli("--no-cache", "--select", "VJP101", "--output-format", "concise", ".", cwd=tmp_path)
    # `project`'s output depends on `basis`: the fix is unsafe, and its `None` is marked (issue 37)
    assert check.stdout.startswith("project.ipynb:cell 3:2:16: VJP101 `basis` (position 1) is in nondiff_argnums")
    proc = run_cli("--no-cache", "--select", "VJP101", "--fix", "--unsafe-fixes", ".", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    after = nbformat.read(path, as_version=4)
    assert [c.source for c in after.cells] == [
        "import jax\nimport jax.numpy as jnp\n%load_ext autoreload",
        "The rule:",
        "@jax.custom_vjp\ndef project(x, basis: jax.Array):\n    return basis @ x",
        "def project_fwd(x, basis):\n    return project(x, basis), basis\n\n\n"
        "def project_bwd(basis, ct):\n    return (basis.T @ ct, None)  # noqa: VJP602\n\n\n"
        "project.defvjp(project_fwd, project_bwd)\n!echo ok"]
    assert [c.get("id") for c in after.cells] == [c.get("id") for c in before.cells]


@pytest.mark.cli
def test_notebooks_false_turns_them_off(copied: Path):
    (copied / "pyproject.toml").write_text("[tool.vjplint]\nnotebooks = false\n")
    walked = run_cli("--no-cache", ".", cwd=copied)
    assert (walked.returncode, walked.stderr) == (0, "vjplint: warning: No Python files found under .\n")
    named = run_cli("--no-cache", ACROSS.name, cwd=copied)
    assert named.stderr.startswith(f"vjplint: warning: {ACROSS.name}: notebooks are turned off "
                                   "(`notebooks = false`); skipped\n")
    # pre-commit names every staged notebook (the hooks' types_or has jupyter): skipped silently
    hook = run_cli("--no-cache", "--force-exclude", ACROSS.name, cwd=copied)
    assert (hook.returncode, hook.stdout, hook.stderr) == (0, "", f"vjplint: warning: No Python files found under {ACROSS.name}\n")


@pytest.mark.cli
def test_a_broken_notebook_is_an_error_not_a_crash(tmp_path: Path):
    (tmp_path / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (tmp_path / "custom_vjp.ipynb").write_text('{"cells": 3, "custom_vjp": 1}', encoding="utf-8")
    proc = run_cli("--no-cache", "broken.ipynb", "custom_vjp.ipynb", cwd=tmp_path)
    assert proc.returncode == 2
    assert "vjplint: error: custom_vjp.ipynb: not a Jupyter notebook (no `cells` list)\n" in proc.stderr


@pytest.mark.cli
def test_stdin_with_a_notebook_name_is_linted_as_cells():
    data = ACROSS.read_bytes()
    proc = run_cli("--no-cache", "--output-format", "concise", "--stdin-filename", ACROSS.name, "-", stdin=data)
    assert (proc.returncode, proc.stdout.splitlines()[0]) == (1, VJP307)
    fix = run_cli("--fix", "--stdin-filename", ACROSS.name, "-", stdin=data)
    assert (fix.returncode, fix.stdout, fix.stderr) == (
        2, "", "vjplint: error: --fix and --diff read a notebook from its file, not from stdin\n")


@pytest.mark.cli
def test_add_noqa_writes_into_the_cell_and_a_second_run_adds_nothing(copied: Path):
    path = copied / ACROSS.name
    before = path.read_bytes()
    first = run_cli("--no-cache", "--add-noqa", ".", cwd=copied)
    assert (first.returncode, first.stderr) == (0, "Added 1 noqa directive.\n")
    assert path.read_bytes() == before.replace(b'"    return g * jnp.tanh(x)\\n"',
                                               b'"    return g * jnp.tanh(x)  # noqa: VJP307\\n"')
    assert run_cli("--no-cache", ".", cwd=copied).stdout == "All checks passed!\n"
    second = run_cli("--no-cache", "--add-noqa", ".", cwd=copied)
    assert (second.returncode, second.stderr, path.read_bytes().count(b"noqa")) == (0, "Added 0 noqa directives.\n", 1)


def test_jupytext_percent_files_are_plain_python():
    """A `# %%` percent-format .py file (jupytext) is linted as the Python it is: its cell markers
    are comments, rows are the file's, and `cell` stays None."""
    from tests.conftest import lint

    text = ACROSS.read_bytes()
    cells = notebook.read(text)
    py = cells.text.replace("# %% vjplint: cell", "# %% [code] cell")  # jupytext's spelling, not vjplint's
    (d,) = lint(py, select=["VJP307"], filename="percent.py")
    assert (d.cell, d.location.row) == (None, py.split("\n").index("    return g * jnp.tanh(x)") + 1)


@pytest.mark.cli
def test_lines_quoted_in_messages_are_the_cells_lines(tmp_path: Path):
    _write(tmp_path / "zero.ipynb",
           new_code_cell("import jax"),
           new_markdown_cell("A rule for `x` only:"),
           new_code_cell("@jax.custom_jvp\ndef f(x, y):\n    return x ** 2 * y\n\n"
                         "f.defjvps(lambda x_dot, out, x, y: 2 * x * y * x_dot, None)"),
           new_code_cell("print(jax.grad(f)(2., 3.))\nprint(jax.grad(f, 1)(2., 3.))"))
    proc = run_cli("--no-cache", "--output-format", "concise", "--select", "VJP609", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    head = proc.stdout.splitlines()[0]
    assert head.startswith("zero.ipynb:cell 3:5:55: VJP609 `f.defjvps(...)` gives `None` as the tangent rule for `y`, "
                           "but the primal's output depends on `y` (`x ** 2 * y`), and `jax.grad(f, 1)` "
                           "(cell 4, line 2) differentiates it"), head
