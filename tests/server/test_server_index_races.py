"""The project index against a save or a lint under way: the interleavings a busy machine produces,
made to happen here in one process by holding the index build (a CI run once waited 300 s in
tests/unit/test_wrapper_inference.py for a re-lint after a save that never came).

The server object is the real one (`create_server`), with a real workspace on disk; only the
order of events is forced, by holding `build_index` until the test lets it go."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, List

import pytest

from tests.unit.test_wrapper_inference import write_tree

pytestmark = pytest.mark.server

NEW_WRAPPER = "return jax.custom_vjp(fun, nondiff_argnums=nondiff_argnums)"


def _server(root: Path) -> Any:
    from pygls.workspace import Workspace
    from lsprotocol import types

    from vjplint.server.lsp_server import create_server

    from tests.server.test_server import PYPROJECT

    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")  # as the LSP tests' workspace
    server = create_server()
    folder = types.WorkspaceFolder(uri=root.as_uri(), name="ws")
    server.protocol._workspace = Workspace(root.as_uri(), workspace_folders=[folder])
    server.config_for(None)  # the settings layer, as the first lint makes it (no index started)
    return server


def _codes(server: Any, path: Path) -> List[str]:
    """The codes of `path`'s lint with the settings the server holds for it now."""
    from vjplint.lint.engine import lint_source

    config, facts = server.config_for(path)
    result = lint_source(str(path), path.read_text(), config, facts=facts)
    return [d.code for d in result.diagnostics]


def _save_new_wrapper(root: Path) -> Path:
    shims = root / "mylib" / "shims.py"
    shims.write_text(shims.read_text().replace("return jax.custom_vjp(fun)", NEW_WRAPPER))
    return shims


def test_a_save_during_the_first_index_build_is_not_lost(tmp_path: Path, monkeypatch: Any) -> None:
    """The folder's first index has read shims.py when the user saves a change to it: the save
    starts a newer build, which wins; before, the save was dropped (no index yet) and the old
    wrappers stayed until the next save."""
    import vjplint.server.indexing as indexing

    write_tree(tmp_path)
    server = _server(tmp_path)
    tools = tmp_path / "mylib" / "tools.py"
    read, go = threading.Event(), threading.Event()
    original = indexing.build_index

    def held(*args: Any, **kwargs: Any) -> Any:
        index = original(*args, **kwargs)
        if not read.is_set():  # the first build only: it has read the old shims.py
            read.set()
            assert go.wait(60)
        return index

    monkeypatch.setattr(indexing, "build_index", held)
    folder = str(tmp_path)
    first = server.start_index(folder, facts=False)
    assert read.wait(60)
    server.refresh_wrappers(_save_new_wrapper(tmp_path).as_uri())
    go.set()
    assert first.wait(60)
    for thread in [t for t in threading.enumerate() if t.name == "vjplint-index"]:
        thread.join(60)
    assert _codes(server, tools) == ["VJP101", "VJP305"]


def test_an_index_installed_during_a_lint_lints_the_document_again(tmp_path: Path, monkeypatch: Any) -> None:
    """A lint reads the settings, then the new wrappers are installed and `refresh_folder` runs
    while the document has no analysis stored (it skips it: 'its lint reads the new settings').
    The lint, which read the old ones, must see that and have the document linted again."""
    write_tree(tmp_path)
    server = _server(tmp_path)
    folder = str(tmp_path)
    tools = tmp_path / "mylib" / "tools.py"
    uri = tools.as_uri()
    server.start_index(folder, facts=False).wait(60)
    assert _codes(server, tools) == ["VJP101", "VJP306"]
    server.versions[uri] = 1
    server.protocol._workspace.put_text_document(
        __import__("lsprotocol").types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                                       text=tools.read_text()))
    scheduled: List[str] = []
    monkeypatch.setattr(server, "schedule", lambda u, delay: scheduled.append(u))
    from vjplint.project.index import build_index

    original = server.config_for
    calls = [0]

    def config_for(path: Any, wait: float = 0.0) -> Any:
        found = original(path, wait)
        calls[0] += 1
        if calls[0] == 1:  # the lint has read the old settings: now the save's build installs its index
            _save_new_wrapper(tmp_path)
            files = [f for f, _ in server.project.files([folder], [])]
            server.wrappers[folder] = build_index(files, server.project.settings_for_dir(folder),
                                                  use_cache=False, base=folder)
            server.refresh_folder(folder)  # as the build does: the document has no analysis yet
            assert scheduled == []
        return found

    monkeypatch.setattr(server, "config_for", config_for)
    analysis = server.analyse(uri, tools.read_text())
    assert [d.code for d in analysis.diagnostics] == ["VJP101", "VJP306"]  # the old settings' lint
    assert scheduled == [uri]  # ... and it is linted again with the new ones
    assert _codes(server, tools) == ["VJP101", "VJP305"]
