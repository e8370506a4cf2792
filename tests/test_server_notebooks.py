"""Notebook documents over LSP 3.17 (`notebookDocument/didOpen|didChange|didSave|didClose`),
through pytest-lsp's real client: the code cells are one module in order, diagnostics come per
cell URI with cell-relative positions, and they equal `vjplint check` of the same notebook
written as an .ipynb file by nbformat."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Tuple

import nbformat
import pytest
from conftest import run_cli
from lsprotocol import types
from test_server import PYPROJECT, SERVER, published, stop

pytestmark = pytest.mark.server

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
