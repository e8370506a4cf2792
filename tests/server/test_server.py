"""`vjplint server` end to end: a real LSP client (pytest-lsp) talks to `python -m vjplint server`.

Each test starts its own server in a fresh workspace (a tmp dir with a pyproject.toml) and
drives it as an editor would: open, edit, ask for code actions, apply their edits, save, close.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tests.conftest import ROOT, run_cli
from tests.server import HANG_GUARD_S
from vjplint.install_hint import install_hint

SOURCE = '''\
from functools import partial
import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, None


def clip_gradient_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


# A look-alike: a callable in a nondiff position is what nondiff_argnums is for.
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def apply(fn, x):
    return fn(x)


def apply_fwd(fn, x):
    return fn(x), x


def apply_bwd(fn, x, g):
    return (jax.vjp(fn, x)[1](g)[0],)


apply.defvjp(apply_fwd, apply_bwd)
'''
CLEAN = SOURCE[SOURCE.index("# A look-alike"):].replace("# A look-alike", "from functools import partial\nimport jax\n#")
BARE_INT = '''\
from functools import partial
import jax


@partial(jax.custom_vjp, nondiff_argnums=0)
def scale(n, x):
    return x * n
'''
PYPROJECT = "[tool.vjplint]\n"
LINT_LINE = 6  # 0-based line of `def clip_gradient(lo, hi, x):`


# -- a client that records every publishDiagnostics ------------------------------------------------
def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    client.published = []  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]
    client.applied_edits = []  # type: ignore[attr-defined]

    def publish(c: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        c.diagnostics[params.uri] = params.diagnostics
        c.published.append(params)  # type: ignore[attr-defined]

    def register(c: LanguageClient, params: types.RegistrationParams) -> None:
        c.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    def apply_edit(c: LanguageClient, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        c.applied_edits.append(params.edit)  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=True)

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    features[types.CLIENT_REGISTER_CAPABILITY] = register
    features[types.WORKSPACE_APPLY_EDIT] = apply_edit
    register_lsp_features(client, features)
    return client


SERVER = ClientServerConfig(
    server_command=[sys.executable, "-m", "vjplint", "server"],
    client_factory=make_client,
    server_env={**os.environ, "PYTHONPATH": str(ROOT)},
)


async def start(tmp_path: Path, capabilities: Optional[types.ClientCapabilities] = None,
                options: Optional[Dict[str, Any]] = None) -> LanguageClient:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    client = await SERVER.start()
    await client.initialize_session(types.InitializeParams(
        capabilities=capabilities or types.ClientCapabilities(),
        root_uri=tmp_path.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")],
        initialization_options=options,
    ))
    return client


async def stop(client: LanguageClient) -> None:
    await client.shutdown_session()
    await client.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path


async def published(client: LanguageClient, uri: str, version: Optional[int] = None, *, after: int = 0,
                    timeout: float = HANG_GUARD_S, where: Optional[Any] = None) -> List[types.Diagnostic]:
    """The first diagnostics for `uri` (at `version`) published after the `after`-th notification
    (and, with `where`, the first that `where(diagnostics)` accepts: a server may publish an
    analysis again, unchanged, before the one a test waits for). Waited for as long as it takes:
    `timeout` only ends a hang (a busy machine is slow, not wrong)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for params in client.published[after:]:  # type: ignore[attr-defined]
            if params.uri == uri and (version is None or params.version == version) and \
                    (where is None or where(list(params.diagnostics))):
                return list(params.diagnostics)
        await asyncio.sleep(0.01)
    raise AssertionError(f"no diagnostics for {uri} (version {version}) within {timeout}s (a hang)")


def open_doc(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


def change(client: LanguageClient, uri: str, version: int, text: str,
           range_: Optional[types.Range] = None) -> None:
    event: Any = (types.TextDocumentContentChangePartial(range=range_, text=text) if range_ is not None
                  else types.TextDocumentContentChangeWholeDocument(text=text))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[event]))


def apply_text_edits(text: str, edits: List[types.TextEdit]) -> str:
    """Apply LSP edits (UTF-16 positions) as an editor does."""
    lines = text.split("\n")

    def offset(p: types.Position) -> int:
        before = sum(len(line) + 1 for line in lines[:p.line])
        line = lines[p.line] if p.line < len(lines) else ""
        units, index = 0, 0
        while index < len(line) and units < p.character:
            units += 2 if ord(line[index]) > 0xFFFF else 1
            index += 1
        return before + index

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def edits_of(edit: Optional[types.WorkspaceEdit], uri: str) -> List[types.TextEdit]:
    assert edit is not None
    if edit.document_changes:
        return [e for change_ in edit.document_changes if change_.text_document.uri == uri for e in change_.edits]
    assert edit.changes is not None
    return list(edit.changes[uri])


def cli_diagnostics(text: str) -> List[Any]:
    from vjplint.settings.config import Config
    from vjplint.lint.engine import lint_source

    return lint_source("example.py", text, Config()).diagnostics


def cli_fix(tmp_path: Path, text: str) -> str:
    """What `vjplint --fix` makes of `text`."""
    target = tmp_path / "cli" / "example.py"
    target.parent.mkdir(exist_ok=True)
    shutil.copy(tmp_path / "pyproject.toml", target.parent / "pyproject.toml")
    target.write_text(text, encoding="utf-8")
    proc = run_cli("--fix", "--no-cache", str(target), cwd=target.parent)
    assert proc.returncode in (0, 1), proc.stderr
    return target.read_text(encoding="utf-8")


async def raw_request(client: LanguageClient, msg_id: str, body: bytes) -> Any:
    """Write a hand-made (possibly malformed) request on the wire and await the answer to `msg_id`."""
    from concurrent.futures import Future

    future: Future = Future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._result_types[msg_id] = None
    client.protocol.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    return await asyncio.wait_for(asyncio.wrap_future(future), HANG_GUARD_S)


def rng(line: int, start: int, end_line: int, end: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=start), end=types.Position(line=end_line, character=end))


# -- tests -------------------------------------------------------------------------------------------
async def test_diagnostics_on_open_change_and_close(workspace: Path) -> None:
    client = await start(workspace, options={"settings": {"debounceMs": 150}})
    try:
        uri = open_doc(client, workspace / "clip.py", SOURCE)
        diagnostics = await published(client, uri, 1)
        expected = [d for d in cli_diagnostics(SOURCE)]
        assert [(d.code, d.range) for d in diagnostics] == [
            ("VJP101", rng(LINT_LINE, 18, LINT_LINE, 20)),
            ("VJP101", rng(LINT_LINE, 22, LINT_LINE, 24)),
        ]
        assert [d.message for d in diagnostics] == [d.message for d in expected]
        first = diagnostics[0]
        assert first.severity == types.DiagnosticSeverity.Error
        assert first.source == "vjplint"
        assert first.code_description is not None
        assert first.code_description.href.endswith("/docs/rules/VJP101.md")
        assert first.code_description.href == (ROOT / "vjplint" / "docs" / "rules" / "VJP101.md").as_uri()

        # An edit above the finding moves it (incremental sync, debounced lint).
        count = len(client.published)
        change(client, uri, 2, "# a comment\n", rng(0, 0, 0, 0))
        moved = await published(client, uri, 2, after=count)
        assert [(d.code, d.range.start.line) for d in moved] == [("VJP101", LINT_LINE + 1)] * 2

        # Rapid edits are coalesced: only the last version is linted and published.
        count = len(client.published)
        for version in range(3, 8):
            change(client, uri, version, "#", rng(0, 0, 0, 0))
        await published(client, uri, 7, after=count)
        assert {p.version for p in client.published[count:]} == {7}

        # A whole-document replacement with only the look-alike: nothing left.
        count = len(client.published)
        change(client, uri, 8, CLEAN)
        assert await published(client, uri, 8, after=count) == []

        change(client, uri, 9, SOURCE)
        assert len(await published(client, uri, 9)) == 2

        # A syntax error in the buffer is a diagnostic; the server keeps serving the file.
        broken = SOURCE.replace("def clip_gradient(lo, hi, x):", "def clip_gradient(lo, hi, x:")
        change(client, uri, 10, broken)
        diagnostics = await published(client, uri, 10)
        assert [(d.code, d.range.start.line) for d in diagnostics] == [("VJP900", LINT_LINE)]
        assert diagnostics[0].message.startswith("cannot parse this file: syntax error")
        change(client, uri, 11, SOURCE)
        assert [d.code for d in await published(client, uri, 11)] == ["VJP101", "VJP101"]

        # Saving lints again at once (no debounce).
        count = len(client.published)
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert [d.code for d in await published(client, uri, 11, after=count)] == ["VJP101", "VJP101"]
        count = len(client.published)
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert await published(client, uri, after=count) == []
    finally:
        await stop(client)


async def test_a_crlf_document_with_astral_and_accented_names_gets_utf16_positions_and_keeps_its_line_endings(
        workspace: Path) -> None:
    """Issue 48's line-ending and encoding probes through the real server: CRLF line breaks, and
    before the finding's column a letter outside the BMP (two UTF-16 units, four UTF-8 bytes) and
    an accented one (one unit, two bytes). The diagnostic's column is counted in UTF-16 units (the
    default encoding), and the noqa quick fix keeps every CRLF."""
    name = "clip_\U00010400\u00e9"  # a Deseret letter, then e-acute: both Python identifier letters
    text = SOURCE.replace("clip_gradient", name).replace("\n", "\r\n")
    client = await start(workspace)
    try:
        uri = open_doc(client, workspace / "clip.py", text)
        diagnostics = await published(client, uri, 1)
        assert [(d.code, d.range.start.line, d.range.start.character, d.range.end.character)
                for d in diagnostics] == [("VJP101", LINT_LINE, 13, 15), ("VJP101", LINT_LINE, 17, 19)]
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostics[0].range,
            context=types.CodeActionContext(diagnostics=[diagnostics[0]], only=[types.CodeActionKind.QuickFix])))
        noqa = [a for a in actions if a.title == "Disable VJP101 for this line"]
        assert len(noqa) == 1
        fixed = apply_text_edits(text, edits_of(noqa[0].edit, uri))
        assert fixed.split("\r\n")[LINT_LINE] == f"def {name}(lo, hi, x):  # noqa: VJP101"
        assert fixed.count("\r\n") == text.count("\r\n") and "\n" not in fixed.replace("\r\n", "")
    finally:
        await stop(client)


async def test_quick_fixes_noqa_and_hover(workspace: Path) -> None:
    client = await start(workspace)
    try:
        uri = open_doc(client, workspace / "clip.py", SOURCE)
        diagnostics = await published(client, uri, 1)
        # Hovering a finding shows its message and its rule's documentation.
        first = diagnostics[0].range.start
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(first.line, first.character)))
        assert hover is not None and hover.contents.value.startswith(f"**VJP101** {diagnostics[0].message}")
        assert "# nondiff-array (VJP101)" in hover.contents.value
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostics[0].range,
            context=types.CodeActionContext(diagnostics=[diagnostics[0]], only=[types.CodeActionKind.QuickFix])))
        noqa = [a for a in actions if a.title == "Disable VJP101 for this line"]
        assert len(noqa) == 1 and noqa[0].kind == types.CodeActionKind.QuickFix
        text = apply_text_edits(SOURCE, edits_of(noqa[0].edit, uri))
        assert text.splitlines()[LINT_LINE] == "def clip_gradient(lo, hi, x):  # noqa: VJP101"
        count = len(client.published)
        change(client, uri, 2, text)
        assert await published(client, uri, 2, after=count) == []  # the noqa covers both names

        # Hovering the code in the noqa comment shows the rule's documentation.
        column = text.splitlines()[LINT_LINE].index("VJP101") + 2
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(LINT_LINE, column)))
        assert hover is not None and hover.contents.value.startswith("# nondiff-array (VJP101)")
        assert await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(LINT_LINE, 2))) is None

        # An existing `# noqa:` for another tool is extended, not duplicated.
        other = SOURCE.replace("def clip_gradient(lo, hi, x):", "def clip_gradient(lo, hi, x):  # noqa: E501")
        change(client, uri, 3, other)
        diagnostics = await published(client, uri, 3)
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostics[1].range,
            context=types.CodeActionContext(diagnostics=[diagnostics[1]])))
        noqa = [a for a in actions if a.title.startswith("Disable")]
        text = apply_text_edits(other, edits_of(noqa[0].edit, uri))
        assert text.splitlines()[LINT_LINE] == "def clip_gradient(lo, hi, x):  # noqa: E501, VJP101"

        # VJP103's bare-int fix (a one-edit fix): the title says it is unsafe, the edit writes the tuple.
        bare = open_doc(client, workspace / "bare.py", BARE_INT)
        diagnostics = await published(client, bare, 1)
        assert [d.code for d in diagnostics] == ["VJP103"]
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=bare), range=diagnostics[0].range,
            context=types.CodeActionContext(diagnostics=diagnostics)))
        fixes = [a for a in actions if not a.title.startswith("Disable")]
        assert len(fixes) == 1
        assert fixes[0].title.startswith("VJP103: ") and fixes[0].title.endswith("(unsafe fix)")
        assert fixes[0].is_preferred is False
        fixed = apply_text_edits(BARE_INT, edits_of(fixes[0].edit, bare))
        assert "@partial(jax.custom_vjp, nondiff_argnums=(0,))" in fixed
        # Unsafe fixes are not part of fix-all unless the user opts in.
        only_fix_all = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=bare), range=diagnostics[0].range,
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
        assert list(only_fix_all) == []
    finally:
        await stop(client)


async def test_quick_fix_and_fix_all_equal_the_cli(workspace: Path) -> None:
    client = await start(workspace)
    try:
        expected = cli_fix(workspace, SOURCE)
        assert expected != SOURCE
        uri = open_doc(client, workspace / "clip.py", SOURCE)
        diagnostics = await published(client, uri, 1)
        # Hovering a finding shows its message and its rule's documentation.
        first = diagnostics[0].range.start
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(first.line, first.character)))
        assert hover is not None and hover.contents.value.startswith(f"**VJP101** {diagnostics[0].message}")
        assert "# nondiff-array (VJP101)" in hover.contents.value
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostics[0].range,
            context=types.CodeActionContext(diagnostics=[diagnostics[0]], only=[types.CodeActionKind.QuickFix])))
        quick = [a for a in actions if a.title.startswith("VJP101: ")]
        assert len(quick) == 1 and quick[0].is_preferred
        assert apply_text_edits(SOURCE, edits_of(quick[0].edit, uri)) == expected

        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=rng(0, 0, 0, 0),
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
        assert [a.kind for a in actions] == ["source.fixAll.vjplint"]
        fixed = apply_text_edits(SOURCE, edits_of(actions[0].edit, uri))
        assert fixed == expected

        # The fix-all command sends the same edit through workspace/applyEdit.
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="vjplint.applyAutofix", arguments=[{"uri": uri}]))
        [applied] = client.applied_edits  # type: ignore[attr-defined]
        assert apply_text_edits(SOURCE, edits_of(applied, uri)) == expected

        count = len(client.published)
        change(client, uri, 2, fixed)
        assert [d.code for d in await published(client, uri, 2, after=count)] == []

        # Unsafe fixes join fix-all only when the user opts in (here via didChangeConfiguration).
        bare = open_doc(client, workspace / "bare.py", BARE_INT)
        await published(client, bare, 1)
        fix_all = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=bare), range=rng(0, 0, 0, 0),
            context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll]))
        assert list(await client.text_document_code_action_async(fix_all)) == []
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"vjplint": {"unsafeFixes": True}}))
        [action] = await client.text_document_code_action_async(fix_all)
        assert "nondiff_argnums=(0,)" in apply_text_edits(BARE_INT, edits_of(action.edit, bare))
    finally:
        await stop(client)


async def test_vscode_capabilities_resolve_lazily_and_watch_pyproject(workspace: Path) -> None:
    """VS Code resolves code action edits lazily and registers file watchers dynamically."""
    client = await start(workspace, client_capabilities("visual-studio-code"))
    try:
        uri = open_doc(client, workspace / "bare.py", BARE_INT)
        diagnostics = await published(client, uri, 1)
        for _ in range(200):
            if client.registrations:  # type: ignore[attr-defined]
                break
            await asyncio.sleep(0.01)
        [registration] = client.registrations  # type: ignore[attr-defined]
        assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        assert registration.register_options["watchers"][0]["globPattern"] == "**/pyproject.toml"

        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostics[0].range,
            context=types.CodeActionContext(diagnostics=diagnostics)))
        fix = next(a for a in actions if a.title.startswith("VJP103"))
        assert fix.edit is None and fix.data is not None  # computed on resolve
        resolved = await client.code_action_resolve_async(fix)
        fixed = apply_text_edits(BARE_INT, edits_of(resolved.edit, uri))
        assert "nondiff_argnums=(0,)" in fixed

        # pyproject.toml changes: the watcher notification re-reads it and re-lints open files.
        (workspace / "pyproject.toml").write_text('[tool.vjplint]\nignore = ["VJP103"]\n', encoding="utf-8")
        count = len(client.published)
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[types.FileEvent(
            uri=(workspace / "pyproject.toml").as_uri(), type=types.FileChangeType.Changed)]))
        assert await published(client, uri, after=count) == []

        # ... and so does saving a pyproject.toml in the editor.
        (workspace / "pyproject.toml").write_text("[tool.vjplint]\n", encoding="utf-8")
        count = len(client.published)
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=(workspace / "pyproject.toml").as_uri())))
        assert [d.code for d in await published(client, uri, after=count)] == ["VJP103"]

        # A broken pyproject.toml: the user is told, and the defaults apply meanwhile.
        (workspace / "pyproject.toml").write_text("[tool.vjplint]\nselekt = []\n", encoding="utf-8")
        count = len(client.published)
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[types.FileEvent(
            uri=(workspace / "pyproject.toml").as_uri(), type=types.FileChangeType.Changed)]))
        assert [d.code for d in await published(client, uri, after=count)] == ["VJP103"]
        assert any("unknown key in [tool.vjplint]: selekt" in m.message for m in client.messages)
    finally:
        await stop(client)


async def test_malformed_and_unexpected_requests_get_errors_and_the_server_goes_on(workspace: Path) -> None:
    client = await start(workspace)
    try:
        uri = open_doc(client, workspace / "clip.py", SOURCE)
        await published(client, uri, 1)
        # Parameters of the wrong shape, and a method nobody implements: error answers.
        with pytest.raises(JsonRpcException) as bad_params:
            await raw_request(client, "bad-1", b'{"jsonrpc": "2.0", "id": "bad-1", "method": '
                                               b'"textDocument/codeAction", "params": {"textDocument": 42}}')
        assert bad_params.value.code == -32602  # InvalidParams
        assert "textDocument/codeAction" in bad_params.value.message
        with pytest.raises(JsonRpcException) as unknown:
            await raw_request(client, "bad-2", b'{"jsonrpc": "2.0", "id": "bad-2", "method": "vjplint/nope"}')
        assert unknown.value.code == -32601  # MethodNotFound
        # A command with bad arguments, and a request for a document that is not open.
        with pytest.raises(Exception):
            await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="vjplint.applyAutofix", arguments=[{"uri": "file:///nowhere.py"}]))
        assert list(await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri="file:///nowhere.py"), range=rng(0, 0, 0, 0),
            context=types.CodeActionContext(diagnostics=[])))) == []
        # Garbage on the wire, then a notification for a document never opened.
        client.protocol.writer.write(b"Content-Length: 9\r\n\r\n{garbage}")
        change(client, "file:///never-opened.py", 2, "x")
        # Still alive: edits are linted and requests answered.
        count = len(client.published)
        change(client, uri, 2, CLEAN)
        assert await published(client, uri, 2, after=count) == []
        info = await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="vjplint.printDebugInformation"))
        assert "vjplint" in info and uri in info
        # What the imports made lives as long as the server: out of the cyclic collector's sight.
        frozen = re.search(r"objects frozen out of the cyclic collector: (\d+)", info)
        assert frozen is not None and int(frozen.group(1)) > 10_000, info
    finally:
        await stop(client)


async def test_a_client_that_can_refresh_pulls_and_gets_nothing_pushed(workspace: Path) -> None:
    capabilities = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(diagnostic=types.DiagnosticClientCapabilities()),
        workspace=types.WorkspaceClientCapabilities(
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)))
    client = await start(workspace, capabilities)
    try:
        uri = open_doc(client, workspace / "clip.py", SOURCE)
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert [d.code for d in report.items] == ["VJP101", "VJP101"]
        await asyncio.sleep(0.3)
        assert client.published == []  # type: ignore[attr-defined]
    finally:
        await stop(client)


async def test_neovim_gets_pushed_diagnostics_in_utf8(workspace: Path) -> None:
    """Neovim 0.11 asks for UTF-8 positions and can pull diagnostics, but cannot be told to pull
    again (no workspace.diagnostics.refreshSupport): the server pushes, and answers pulls with
    nothing, so each diagnostic shows once and a changed pyproject.toml still refreshes them."""
    client = await start(workspace, client_capabilities("neovim@v0.11.0"))
    try:
        # U+1D706 is one code point, two UTF-16 units and four UTF-8 bytes.
        text = SOURCE.replace("(lo,", "(\U0001d706o,").replace(", lo,", ", \U0001d706o,")
        uri = open_doc(client, workspace / "clip.py", text)
        pushed = await published(client, uri, 1)
        assert [(d.code, d.range) for d in pushed] == [
            ("VJP101", rng(LINT_LINE, 18, LINT_LINE, 23)), ("VJP101", rng(LINT_LINE, 25, LINT_LINE, 27))]
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert list(report.items) == []
    finally:
        await stop(client)


async def test_server_without_the_lsp_extra_says_how_to_install_it(tmp_path: Path) -> None:
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "pygls.py").write_text("raise ImportError('blocked', name='pygls')\n", encoding="utf-8")
    proc = run_cli("server", env={"PYTHONPATH": f"{blocker}{os.pathsep}{ROOT}"})
    assert proc.returncode == 2
    assert install_hint("lsp") in proc.stderr and "Traceback" not in proc.stderr


async def test_rule_links_follow_docs_url(workspace: Path) -> None:
    """codeDescription.href comes from the same setting as every other rule link (vjplint.links)."""
    client = await start(workspace)
    try:
        (workspace / "pyproject.toml").write_text(
            PYPROJECT + 'docs-url = "https://docs.example.org/vjplint/rules/{code}/"\n', encoding="utf-8")
        uri = open_doc(client, workspace / "clip.py", SOURCE)
        diagnostics = await published(client, uri, 1)
        assert [d.code_description.href for d in diagnostics if d.code_description] == [
            "https://docs.example.org/vjplint/rules/VJP101/"] * 2
    finally:
        await stop(client)
