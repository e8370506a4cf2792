"""Notebook documents over LSP 3.17 (`notebookDocument/didOpen|didChange|didSave|didClose`),
through pytest-lsp's real client: the code cells are one module in order, diagnostics come per
cell URI with cell-relative positions, and they equal `vjplint check` of the same notebook
written as an .ipynb file by nbformat."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Tuple

import nbformat
from tests.conftest import run_cli
from lsprotocol import types
from tests.server.test_server import PYPROJECT, SERVER, published, stop


CELLS: List[Tuple[str, str]] = [
    ("markdown", "# Clipping gradients\nThe bounds are arrays, so they may not be nondiff."),
    ("code", "from functools import partial\nimport jax\nimport jax.numpy as jnp"),
    ("code", "@partial(jax.custom_vjp, nondiff_argnums=(0, 1))\ndef clip(lo, hi, x):\n    return x"),
    ("code", "%timeit -n 1 jnp.ones(3)\n\ndef clip_fwd(lo, hi, x):\n    return x, None\n\n"
             "def clip_bwd(lo, hi, _, g):\n    return (jnp.clip(g, lo, hi),)\n\nclip.defvjp(clip_fwd, clip_bwd)"),
    ("code", "!pip install nothing\nloss = lambda x: clip(jnp.zeros(3), jnp.ones(3), x).sum()"),
]
CAPABILITIES = types.ClientCapabilities(notebook_document=types.NotebookDocumentClientCapabilities(
    synchronization=types.NotebookDocumentSyncClientCapabilities()))


def cell_uri(notebook: Path, n: int) -> str:
    return f"vscode-notebook-cell:{notebook.as_posix()}#cell{n}"


def lsp_cells(notebook: Path, cells: List[Tuple[str, str]]) -> Tuple[List[types.NotebookCell],
                                                                    List[types.TextDocumentItem]]:
    kinds = {"markdown": types.NotebookCellKind.Markup, "code": types.NotebookCellKind.Code}
    nb_cells = [types.NotebookCell(kind=kinds[kind], document=cell_uri(notebook, n)) for n, (kind, _) in enumerate(cells)]
    documents = [types.TextDocumentItem(uri=cell_uri(notebook, n), language_id="python" if kind == "code" else "markdown",
                                        version=1, text=text) for n, (kind, text) in enumerate(cells)]
    return nb_cells, documents


def cli_per_cell(workspace: Path, cells: List[Tuple[str, str]]) -> Dict[int, List[tuple]]:
    """`vjplint check` of the notebook written by nbformat: 1-based cell -> findings (0-based rows)."""
    folder = workspace / "cli"
    folder.mkdir(exist_ok=True)
    (folder / "pyproject.toml").write_text("[tool.vjplint]\n", encoding="utf-8")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(text) if kind == "markdown" else nbformat.v4.new_code_cell(text)
                for kind, text in cells]
    path = folder / "nb.ipynb"
    nbformat.write(nb, str(path))
    proc = run_cli("check", "--no-cache", "--output-format", "json", str(path), cwd=folder)
    assert proc.returncode in (0, 1), proc.stderr
    out: Dict[int, List[tuple]] = {}
    for d in json.loads(proc.stdout):
        out.setdefault(d["cell"], []).append((d["code"], d["location"]["row"] - 1, d["location"]["column"] - 1,
                                              d["end_location"]["row"] - 1, d["end_location"]["column"] - 1,
                                              d["message"]))
    return {cell: sorted(found) for cell, found in out.items()}


def mine(diagnostics: List[types.Diagnostic]) -> List[tuple]:
    return sorted((d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character,
                   d.message) for d in diagnostics)


async def test_notebook_cells_are_one_module_with_cell_positions(tmp_path: Path) -> None:
    notebook = tmp_path / "nb.ipynb"
    notebook_uri = notebook.as_uri()
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    client = await SERVER.start()
    try:
        result = await client.initialize_session(types.InitializeParams(
            capabilities=CAPABILITIES, root_uri=tmp_path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")]))
        sync = result.capabilities.notebook_document_sync
        assert sync is not None and sync.notebook_selector[0].notebook == "jupyter-notebook"
        nb_cells, documents = lsp_cells(notebook, CELLS)
        client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=notebook_uri, notebook_type="jupyter-notebook", version=1,
                                                     cells=nb_cells),
            cell_text_documents=documents))
        expected = cli_per_cell(tmp_path, CELLS)
        assert sorted(expected) == [3]  # VJP101 on `lo` and `hi`, in the cell that defines clip
        found = await published(client, cell_uri(notebook, 2))  # the 3rd cell (0-based 2 in its URI)
        assert mine(found) == expected[3]
        assert [d.range.start.line for d in found] == [1, 1]  # `def clip(lo, hi, x):` is the cell's 2nd line
        assert await published(client, cell_uri(notebook, 3)) == []  # other code cells: cleared, no findings

        # An edit in the defining cell moves the findings within that cell only.
        count = len(client.published)
        client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=notebook_uri, version=2),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=cell_uri(notebook, 2), version=2),
                    changes=[types.TextDocumentContentChangePartial(
                        range=types.Range(start=types.Position(line=0, character=0),
                                          end=types.Position(line=0, character=0)),
                        text="# bounds as arrays\n")])]))))
        edited = list(CELLS)
        edited[2] = ("code", "# bounds as arrays\n" + CELLS[2][1])
        moved = await published(client, cell_uri(notebook, 2), after=count)
        assert mine(moved) == cli_per_cell(tmp_path, edited)[3]
        assert [d.range.start.line for d in moved] == [2, 2]

        # A new cell before everything: cell numbers shift, positions within cells do not.
        count = len(client.published)
        new_cell = types.TextDocumentItem(uri=cell_uri(notebook, 9), language_id="python", version=1,
                                          text="import math")
        client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=notebook_uri, version=3),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
                structure=types.NotebookDocumentCellChangeStructure(
                    array=types.NotebookCellArrayChange(start=0, delete_count=0, cells=[types.NotebookCell(
                        kind=types.NotebookCellKind.Code, document=new_cell.uri)]),
                    did_open=[new_cell])))))
        again = await published(client, cell_uri(notebook, 2), after=count)
        assert mine(again) == cli_per_cell(tmp_path, [("code", "import math"), *edited])[4]

        count = len(client.published)
        client.notebook_document_did_save(types.DidSaveNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=notebook_uri)))
        assert mine(await published(client, cell_uri(notebook, 2), after=count)) == mine(again)  # linted again
        count = len(client.published)
        client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=notebook_uri),
            cell_text_documents=[types.TextDocumentIdentifier(uri=d.uri) for d in [new_cell, *documents]]))
        assert await published(client, cell_uri(notebook, 2), after=count) == []  # cleared on close
    finally:
        await stop(client)


SHIMS = '''\
import jax


def my_vjp(fun, nondiff_argnums=()):
    return jax.custom_vjp(fun, nondiff_argnums=nondiff_argnums)
'''
PROJECT_CELLS: List[Tuple[str, str]] = [
    ("markdown", "# Picking"),
    ("code", "from functools import partial\n\nimport jax\nimport jax.numpy as jnp\n\nfrom a import gather\n"
             "from shims import my_vjp"),
    ("code", "@jax.jit\ndef picked(x, i):\n    return jnp.sum(gather(x, i) ** 2)"),
    ("code", "@partial(my_vjp, nondiff_argnums=(0,))\ndef shift(lo, x):\n    return x + lo\n\n\n"
             "shift.defvjp(lambda lo, x: (x + lo, None), lambda lo, _, g: (g,))\n"
             "loss = lambda x: shift(jnp.ones(3), x).sum()"),
]


def write_notebook(path: Path, cells: List[Tuple[str, str]]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_markdown_cell(text) if kind == "markdown" else nbformat.v4.new_code_cell(text)
                for kind, text in cells]
    nbformat.write(nb, str(path))


def cli_workspace(root: Path, cells: List[Tuple[str, str]]) -> Dict[str, List[tuple]]:
    """`vjplint check` of a copy of the workspace whose notebook holds `cells`: file (a notebook's
    as `nb.ipynb:cell N`) -> (code, 0-based row, 0-based column, message)."""
    import shutil

    copy = root.parent / (root.name + "-cli")
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".vjplint_cache"))
    write_notebook(copy / "nb.ipynb", cells)
    proc = run_cli("check", "--no-cache", "--output-format", "json", ".", cwd=copy)
    assert proc.returncode in (0, 1), proc.stderr
    out: Dict[str, List[tuple]] = {}
    for d in json.loads(proc.stdout):
        name = d["filename"] + (f":cell {d['cell']}" if d.get("cell") else "")
        out.setdefault(name, []).append((d["code"], d["location"]["row"] - 1, d["location"]["column"] - 1,
                                         d["message"]))
    return {name: sorted(found) for name, found in out.items()}


def rows_of(diagnostics: List[types.Diagnostic]) -> List[tuple]:
    return sorted((d.code, d.range.start.line, d.range.start.character, d.message) for d in diagnostics)


async def test_a_notebook_feeds_the_project_index_and_follows_the_modules_it_imports(tmp_path: Path) -> None:
    """A notebook's calls are facts of the workspace modules it imports (from its file, then from
    its open buffer, edit by edit), and its own diagnostics follow a saved module it imports
    (here a wrapper of jax.custom_vjp): what `vjplint check` says of the workspace each time."""
    import asyncio

    from tests.server.test_server_project import A, latest, settled

    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (tmp_path / "a.py").write_text(A, encoding="utf-8")
    (tmp_path / "shims.py").write_text(SHIMS, encoding="utf-8")
    notebook = tmp_path / "nb.ipynb"
    write_notebook(notebook, PROJECT_CELLS)
    expected = cli_workspace(tmp_path, PROJECT_CELLS)
    assert [code for code, *_ in expected["a.py"]] == ["VJP101", "VJP104", "VJP301"]
    assert any("at nb.ipynb:cell 3:3 `picked` passes `i`" in m for *_, m in expected["a.py"])
    assert [code for code, *_ in expected["nb.ipynb:cell 4"]] == ["VJP101"]  # through the wrapper
    client = await SERVER.start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=CAPABILITIES, root_uri=tmp_path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")]))
        a = (tmp_path / "a.py").as_uri()
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=a, language_id="python", version=1, text=A)))
        as_cli = lambda want: lambda seen: sorted((c, l - 1, col - 1, m) for l, col, c, m in seen) == want  # noqa: E731
        await settled(client, a, as_cli(expected["a.py"]))  # the notebook on disk calls gather

        # The notebook opened with a cell that no longer calls gather (not saved): a.py follows.
        edited = list(PROJECT_CELLS)
        edited[2] = ("code", "@jax.jit\ndef picked(x, i):\n    return jnp.sum(x[i] ** 2)")
        nb_cells, documents = lsp_cells(notebook, edited)
        client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=notebook.as_uri(), notebook_type="jupyter-notebook",
                                                     version=1, cells=nb_cells),
            cell_text_documents=documents))
        alone = cli_workspace(tmp_path, edited)
        assert [code for code, *_ in alone["a.py"]] == ["VJP102"]
        await settled(client, a, as_cli(alone["a.py"]))
        shift = cell_uri(notebook, 3)
        assert rows_of(await published(client, shift)) == alone["nb.ipynb:cell 4"]

        # The call is back, one line lower in its cell: so are the findings, quoting the cell's line.
        client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=notebook.as_uri(), version=2),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=cell_uri(notebook, 2), version=2),
                    changes=[types.TextDocumentContentChangeWholeDocument(
                        text="@jax.jit\ndef picked(x, i):\n    y = gather(x, i)\n    return jnp.sum(y ** 2)")])]))))
        back = list(PROJECT_CELLS)
        back[2] = ("code", "@jax.jit\ndef picked(x, i):\n    y = gather(x, i)\n    return jnp.sum(y ** 2)")
        again = cli_workspace(tmp_path, back)["a.py"]
        assert any("at nb.ipynb:cell 3:3 `picked` passes `i`" in m for *_, m in again)
        await settled(client, a, as_cli(again))

        # shims.py saved without the wrapper: the open notebook's cells are linted again.
        count = len(client.published)
        (tmp_path / "shims.py").write_text(SHIMS.replace("jax.custom_vjp(fun, nondiff_argnums=nondiff_argnums)",
                                                         "fun"), encoding="utf-8")
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=(tmp_path / "shims.py").as_uri())))
        assert "nb.ipynb:cell 4" not in cli_workspace(tmp_path, back)
        assert await published(client, shift, after=count) == []
        await asyncio.sleep(0.5)
        assert rows_of(latest(client, shift) or []) == []
    finally:
        await stop(client)
