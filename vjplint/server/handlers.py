"""The LSP handlers: each message the server answers or acts on, registered on a server."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from vjplint.server import analysis as _analysis
from vjplint.server.state import CMD_DEBUG, CMD_FIX_ALL, FIX_ALL_KIND, Settings, _capability

# vjplint.server.lsp_server.VjplintServer, which imports this module to register the handlers
VjplintServer = Any

log = logging.getLogger("vjplint.server")


def _guard(fn: Any) -> Any:
    """Notifications have nobody to answer: log a failure instead of raising it into pygls."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception:
            log.exception("%s failed", fn.__name__)
            return None

    return wrapper


def register(server: VjplintServer) -> None:
    """Register every handler on `server` (vjplint.server.lsp_server.create_server)."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: VjplintServer, params: types.InitializeParams) -> None:
        ls.event_loop, ls.loop_thread = asyncio.get_event_loop(), threading.get_ident()
        # The engine's imports, in the lint thread, from now: while the client reads the answer
        # and sends `initialized` and its open documents.
        ls.executor.submit(_analysis._warm_up, ls)
        ls.settings = Settings.from_options(params.initialization_options, ls.settings)
        can_pull = _capability(params.capabilities, "text_document", "diagnostic") is not None
        # Pull only when the client can also be told to pull again (a changed pyproject.toml
        # changes every file's diagnostics); otherwise push, and answer pulls with nothing so that
        # a client that does both (Neovim 0.11) shows each diagnostic once.
        can_refresh = bool(_capability(params.capabilities, "workspace", "diagnostics", "refresh_support"))
        mode = ls.settings.diagnostic_mode
        ls.pull = mode == "pull" or (mode == "auto" and can_pull and can_refresh)

    @server.feature(types.INITIALIZED)
    @_guard
    def initialized(ls: VjplintServer, params: types.InitializedParams) -> None:
        if _capability(ls.client_capabilities, "workspace", "did_change_watched_files", "dynamic_registration"):
            # pyproject.toml: settings; Python files: the project index (created, deleted, changed on disk)
            watchers = [types.FileSystemWatcher(glob_pattern=glob)
                        for glob in ("**/pyproject.toml", "**/*.py", "**/*.ipynb")]
            ls.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
                id="vjplint-pyproject", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @_guard
    def did_open(ls: VjplintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.versions[params.text_document.uri] = params.text_document.version
        ls.too_big_to_lint_on_change(params.text_document.uri)  # told now, not at the first edit
        if ls.lintable(params.text_document.uri) and not ls.far_document(params.text_document.uri):
            ls.share_early(params.text_document.uri, params.text_document.text)
        ls.schedule(params.text_document.uri, 0)
        ls.facts_changed(params.text_document.uri)  # the buffer may differ from the file the index read

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @_guard
    def did_change(ls: VjplintServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri in ls.versions:
            ls.versions[uri] = params.text_document.version
            if ls.too_big_to_lint_on_change(uri):
                return  # linted on save
            ls.schedule(uri, ls.settings.debounce_ms)
            ls.facts_changed(uri)  # after the lint, once typing pauses

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @_guard
    def did_save(ls: VjplintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("pyproject.toml"):
            ls.relint_all()
            return
        if uri.endswith((".py", ".pyi")):  # a wrapper may have changed: others may follow
            ls.refresh_wrappers(uri)
            ls.facts_changed(uri, 0)  # a file not open is read from disk
        if uri in ls.versions:
            if uri in ls.save_only:
                ls.saved(uri)
            ls.schedule(uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @_guard
    def did_close(ls: VjplintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.versions.pop(uri, None)
        ls.early_shares.pop(uri, None)
        ls.save_only.pop(uri, None)
        ls.save_only_versions.pop(uri, None)
        handle = ls.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        with ls.lock:
            ls.analyses.pop(uri, None)
            ls.linters.pop(uri, None)
        ls.facts_changed(uri, 0)  # the index reads the file on disk again (an unsaved buffer is gone)
        if not ls.pull:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    @_guard
    def notebook_open(ls: VjplintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.notebook_versions[params.notebook_document.uri] = params.notebook_document.version
        ls.schedule(params.notebook_document.uri, 0)
        ls.facts_changed(params.notebook_document.uri)  # its calls are facts of the modules it imports

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    @_guard
    def notebook_change(ls: VjplintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        if uri in ls.notebook_versions:
            ls.notebook_versions[uri] = params.notebook_document.version
            ls.schedule(uri, ls.settings.debounce_ms)
            ls.facts_changed(uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    @_guard
    def notebook_save(ls: VjplintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        if params.notebook_document.uri in ls.notebook_versions:
            ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    @_guard
    def notebook_close(ls: VjplintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.close_notebook(params.notebook_document.uri)
        ls.facts_changed(params.notebook_document.uri, 0)  # the index reads the file on disk again

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @_guard
    def watched_files(ls: VjplintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.endswith("pyproject.toml") for change in params.changes):
            ls.relint_all()
            return
        ls.files_changed([(c.uri, int(c.type)) for c in params.changes if c.uri.endswith((".py", ".ipynb"))])

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @_guard
    def changed_configuration(ls: VjplintServer, params: types.DidChangeConfigurationParams) -> None:
        ls.settings = Settings.from_options(params.settings, ls.settings)
        ls.relint_all()

    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC,
                    types.DiagnosticOptions(identifier="vjplint", inter_file_dependencies=False,
                                            workspace_diagnostics=False))
    async def pull_diagnostics(ls: VjplintServer, params: types.DocumentDiagnosticParams):
        uri = params.text_document.uri
        if not ls.pull or ls.workspace.get_notebook_document(cell_uri=uri) is not None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])  # pushed to this client (cells: always)
        text = ls.save_only.get(uri) if ls.too_big_to_lint_on_change(uri) else ls.document(uri)
        if text is None:
            try:
                text = ls.workspace.get_text_document(uri).source  # not open: read it from disk
            except (OSError, UnicodeDecodeError):
                text = ""
        if not ls.lintable(uri):
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        # In the lint thread, so that a long lint does not hold up other requests.
        analysis = await ls.in_lint_thread(lambda stop: ls.analyse(uri, text, stop, publishing=True), uri=uri)
        report = types.RelatedFullDocumentDiagnosticReport(items=ls.lsp_diagnostics(analysis))
        asyncio.get_running_loop().call_soon(ls.answered)  # once the answer is written
        return report

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
        resolve_provider=True))
    async def code_action(ls: VjplintServer, params: types.CodeActionParams):
        return await ls.in_lint_thread(ls.code_actions, params, uri=params.text_document.uri)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: VjplintServer, params: types.CodeAction):
        data = params.data if isinstance(params.data, dict) else {}
        return await ls.in_lint_thread(ls.resolve, params, uri=data.get("uri"))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: VjplintServer, params: types.HoverParams):
        return await ls.in_lint_thread(ls.hover, params, uri=params.text_document.uri)

    @server.command(CMD_FIX_ALL)
    async def apply_autofix(ls: VjplintServer, *args: Any):
        target = args[0] if args and isinstance(args[0], dict) else {}
        uri = target.get("uri")
        text = ls.document(uri) if isinstance(uri, str) else None
        if text is None:  # JSON-RPC's InvalidParams, saying what is wrong
            raise JsonRpcInvalidParams(f"{CMD_FIX_ALL} needs the URI of an open document, as "
                                       f"[{{\"uri\": ...}}]; got {_shown(args)}")
        edit = await ls.in_lint_thread(lambda stop: ls.fix_all_edit(uri, ls.analyse(uri, text, stop), stop), uri=uri)
        if edit is not None:
            ls.workspace_apply_edit(types.ApplyWorkspaceEditParams(edit=edit, label="vjplint: Fix all"))
        return None

    @server.command(CMD_DEBUG)
    def debug(ls: VjplintServer, *args: Any) -> str:
        info = ls.debug_information()
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=info))
        return info


def _shown(args: Any) -> str:
    text = json.dumps(list(args), default=repr)
    return text if len(text) <= 200 else text[:200] + "..."
