"""The Helix recipe of docs/editors-and-ci.md, started as Helix starts it: `command` and `args`
from the documented languages.toml, its `config` as initializationOptions. Helix itself is not
installable from the registries of the test machines (Debian 12 has no `helix` package, PyPI
none), so this is the closest to a headless Helix run."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from tests.conftest import ROOT
from lsprotocol import types
from pytest_lsp import ClientServerConfig
from tests.server.test_server import PYPROJECT, SOURCE, make_client, open_doc, published, stop

tomllib = __import__("tomllib") if sys.version_info >= (3, 11) else __import__("tomli")


def helix_languages_toml() -> dict:
    doc = (ROOT / "docs" / "editors-and-ci.md").read_text(encoding="utf-8")
    section = doc[doc.index("### Helix"):]
    block = re.search(r"```toml\n(.*?)```", section, re.S)
    assert block is not None
    return tomllib.loads(block.group(1))


def test_the_recipe_names_the_server_for_python() -> None:
    config = helix_languages_toml()
    server = config["language-server"]["vjplint"]
    assert (server["command"], server["args"]) == ("vjplint", ["server"])
    python = next(lang for lang in config["language"] if lang["name"] == "python")
    assert "vjplint" in python["language-servers"]


async def test_the_server_runs_as_helix_starts_it(tmp_path: Path) -> None:
    server = helix_languages_toml()["language-server"]["vjplint"]
    # `vjplint` on PATH is this checkout's `python -m vjplint`.
    command = [sys.executable, "-m", "vjplint", *server["args"]]
    config = ClientServerConfig(server_command=command, client_factory=make_client,
                                server_env={**os.environ, "PYTHONPATH": str(ROOT)})
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    client = await config.start()
    try:
        # A client that could pull: the recipe's `diagnosticMode = "push"` must win, which
        # shows that Helix's `config` arrives as the server's settings.
        capabilities = types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(diagnostic=types.DiagnosticClientCapabilities()),
            workspace=types.WorkspaceClientCapabilities(
                diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)))
        await client.initialize_session(types.InitializeParams(
            capabilities=capabilities, root_uri=tmp_path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")],
            initialization_options=server.get("config")))
        uri = open_doc(client, tmp_path / "clip.py", SOURCE)
        assert [d.code for d in await published(client, uri, 1)] == ["VJP101", "VJP101"]
    finally:
        await stop(client)
