"""The Language Server: a thin layer over the engine, incremental (`vjplint.lint.incremental`).

Diagnostics are pushed on open, save and change (linting in a worker thread; edits coalesce,
superseded lints stop) and cleared on close, or pulled (`textDocument/diagnostic`) when the
client supports that. Notebook documents (LSP 3.17) are linted as one module, diagnostics
pushed per cell (`vjplint.server.notebooks`). Code actions: a quick fix per fixable
diagnostic, "Disable VJPxxx for this line", and `source.fixAll.vjplint`; their edits are
computed lazily (`codeAction/resolve`) when the client allows it, else for the requested range
only, each on its derivative's family of statements (`vjplint.server.fixes`).
Configuration comes from the nearest `pyproject.toml` and is re-read when one changes.
No handler lets an exception escape: a broken request gets an error answer, the server goes on.
Messages are read by `vjplint.server.framing`, which resynchronises after a broken frame (a bad,
missing or wrong Content-Length); what cannot be read is answered or logged in one line. A
document over `lintOnChangeMaxSize` is linted on open and save only.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from vjplint import __version__
from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.lint.session import LintSession
from vjplint.diagnostics import Applicability, Diagnostic, Position
from vjplint.errors import ConfigError
from vjplint.lint.incremental import IncrementalLinter, Superseded
from vjplint import links
from vjplint.output import lsp as lspfmt
from vjplint.syntax.positions import source_lines
from vjplint.server import actions
from vjplint.server.indexing import INDEX_WAIT_S, Indexing, uri_path as _path
from vjplint.server.lint_helper import AHEAD_FAMILY, SPLIT_MIN_LINES, WARM_UP, LintHelper
from vjplint.project.workspace import Overrides, Workspace
from vjplint.fixes.apply import fix_text
from vjplint.fixes.named_elsewhere import mark_unsafe, named_in_others, residual_plans, targets_in
from vjplint.lint.engine import lint_source
from vjplint.project.discover import _excluded as excluded
from vjplint.rules.docs import render_rule
from vjplint.rules.registry import all_rules
from vjplint.server.fixes import attach_family_fixes
from vjplint.server.framing import Frames, request_id
from vjplint.server.notebooks import notebook_text, per_cell

log = logging.getLogger("vjplint.server")
FIX_ALL_KIND = "source.fixAll.vjplint"
PYTHON_SUFFIXES = (".py", ".pyi")
CMD_FIX_ALL = "vjplint.applyAutofix"
CMD_DEBUG = "vjplint.printDebugInformation"


@dataclass
class Settings:
    """Client settings (initializationOptions or workspace/didChangeConfiguration)."""

    configuration: Optional[str] = None  # an explicit pyproject.toml
    select: Optional[Tuple[str, ...]] = None
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    unsafe_fixes: bool = False  # let fix-all apply unsafe fixes too
    fix_all: bool = True
    disable_rule_comment: bool = True
    debounce_ms: int = 0  # bursts coalesce anyway (one queued lint per document, superseded ones stop)
    diagnostic_mode: str = "auto"  # "push", "pull", or "auto": pull when the client can
    # A document longer than this (characters) is linted when opened and saved, not at each edit
    # (docs/editors-and-ci.md, "big documents"; docs/performance.md, "Big documents"); 0: no limit.
    lint_on_change_max_size: int = 1_000_000

    @classmethod
    def from_options(cls, options: Any, base: Optional["Settings"] = None) -> "Settings":
        base = base or cls()
        if not isinstance(options, dict):
            return base
        for key in ("settings", "vjplint"):  # {"settings": {...}} (ruff's shape) or {"vjplint": {...}}
            if isinstance(options.get(key), dict):
                options = options[key]
        get = options.get
        codes = lambda v: tuple(str(c) for c in v) if isinstance(v, list) else None  # noqa: E731
        action = get("codeAction") if isinstance(get("codeAction"), dict) else {}
        rule_comment = action.get("disableRuleComment", {})
        return replace(
            base,
            configuration=get("configuration", base.configuration),
            select=codes(get("select")) if "select" in options else base.select,
            extend_select=codes(get("extendSelect")) or base.extend_select,
            ignore=codes(get("ignore")) or base.ignore,
            unsafe_fixes=bool(get("unsafeFixes", base.unsafe_fixes)),
            fix_all=bool(get("fixAll", base.fix_all)),
            disable_rule_comment=bool(rule_comment.get("enable", base.disable_rule_comment)
                                      if isinstance(rule_comment, dict) else base.disable_rule_comment),
            debounce_ms=int(get("debounceMs", base.debounce_ms)),
            diagnostic_mode=str(get("diagnosticMode", base.diagnostic_mode)),
            lint_on_change_max_size=int(get("lintOnChangeMaxSize", base.lint_on_change_max_size)),
        )


@dataclass
class Analysis:
    text: str
    diagnostics: List[Diagnostic]
    config: Config
    filename: str
    path: Optional[str] = None  # the file on disk, when the document is one
    facts: RunFacts = NO_FACTS  # what the project index derives about it (vjplint.model.run_facts)
    errors: List[str] = field(default_factory=list)
    fixed_text: Dict[bool, Optional[str]] = field(default_factory=dict)  # unsafe? -> fix-all result
    named_elsewhere: Dict[str, str] = field(default_factory=dict)  # custom_vjp -> why its fix is unsafe
    residual_plans: Tuple[Any, ...] = ()  # the fixes another module may feel, before any was made unsafe
    named_checked: bool = False  # whether the workspace index was there to ask (named_elsewhere)


class _Dropped:
    """What an undecodable message becomes once answered: pygls ignores it (not JSON-RPC 2.0)."""

    jsonrpc = "dropped"


class VjplintProtocol(LanguageServerProtocol):
    """pygls logs a request whose params do not decode and never answers it; JSON-RPC wants an
    error response, and a client waiting for one would hang."""

    def structure_message(self, data: Dict[str, Any]) -> Any:
        if isinstance(data, dict) and "jsonrpc" in data and "id" in data and (
                isinstance(data["id"], bool) or not isinstance(data["id"], (int, str, type(None)))):
            raise JsonRpcInvalidRequest(f"an id must be a number or a string, not {type(data['id']).__name__}")
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not (isinstance(data, dict) and "id" in data and "method" in data):
                raise
            if "params" not in data:  # optional in JSON-RPC, required by pygls' generic request type
                try:
                    return super().structure_message({**data, "params": None})
                except JsonRpcException:
                    pass
            cause = exc.__cause__ or exc
            error = JsonRpcInvalidParams(f"invalid params for {data.get('method')!r}: "
                                         f"{type(cause).__name__}: {cause}")
            log.warning("request %r from the client answered with an error: %s", data["id"], error.message)
            self._send_response(data["id"], error=error.to_response_error())
            return _Dropped()

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        """pygls' own, for documents that are open and edits that fit: a change to a document
        never opened is ignored (pygls raised KeyError), and a range beyond the document is
        clamped to it, as LSP says of positions past a line's end (pygls dropped or garbled it),
        each said in one line."""
        uri = params.text_document.uri
        if unquote(uri) not in self.workspace.text_documents:
            log.warning("textDocument/didChange for a document that is not open, ignored: %s", uri)
            return
        document = self.workspace.get_text_document(uri)
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                clamped = _clamped(document.lines, change.range, document.position_codec)
                if clamped != change.range:
                    log.warning("textDocument/didChange: the range %s is outside %s (%d lines); applied as %s",
                                _range_text(change.range), uri, len(document.lines), _range_text(clamped))
                    change = types.TextDocumentContentChangePartial(range=clamped, text=change.text)
            self.workspace.update_text_document(params.text_document, change)
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None


class VjplintServer(Indexing, LanguageServer):
    def __init__(self, debounce_ms: Optional[int] = None) -> None:
        notebooks = types.NotebookDocumentSyncOptions(notebook_selector=[types.NotebookDocumentFilterWithNotebook(
            notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")])], save=True)
        super().__init__("vjplint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=notebooks, protocol_cls=VjplintProtocol)
        self.settings = Settings(debounce_ms=debounce_ms if debounce_ms is not None else Settings.debounce_ms)
        self.versions: Dict[str, Optional[int]] = {}  # open documents: uri -> version
        self.pending: Dict[str, asyncio.TimerHandle] = {}
        self.analyses: Dict[str, Analysis] = {}
        self.linters: Dict[str, IncrementalLinter] = {}  # open documents: their incremental state (lint thread)
        self.session = LintSession()  # the lint session of every document's lint, for the server's life
        self.notebook_versions: Dict[str, int] = {}  # open notebooks: uri -> version
        self.published_cells: Dict[str, List[str]] = {}  # notebook uri -> the cell URIs last published
        self.fixes_warmed = False
        self.helper: Optional[LintHelper] = None  # vjplint.server.lint_helper: shares big first lints
        self.engine_warm = threading.Event()  # the lint thread's warm-up is done (`_warm_up`)
        self.early_shares: Dict[str, _EarlyShare] = {}  # uri -> a first lint sent to the helper at didOpen
        # Whole lints' models, freed in the lint thread once their diagnostics are out (`answered`).
        self.kept: List[List[object]] = []
        self.to_prime: Dict[str, Tuple[IncrementalLinter, str]] = {}  # linted whole: uri -> (its linter, the text)
        self.warm_timer: Optional[asyncio.TimerHandle] = None
        self.queued: set = set()  # documents whose lint is queued and has not started (it reads the newest text)
        self.lock = threading.RLock()  # config caches and analyses are shared with the lint thread
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vjplint-lint")
        self.project: Optional[Workspace] = None  # settings per file (vjplint.project.workspace), reset on a change
        self.init_indexing()  # per workspace folder: wrappers and cross-module facts (vjplint.server.indexing)
        self.reported_config_errors: set = set()
        self.save_only: Dict[str, str] = {}  # big documents (linted on open and save): uri -> the text linted
        self.told_save_only: set = set()  # the documents whose user was told so
        self.pull = False
        self.converter = default_converter()
        self.event_loop: Optional[asyncio.AbstractEventLoop] = None
        self.loop_thread: Optional[int] = None

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve over stdio, with vjplint's reader (`vjplint.server.framing`) in place of
        pygls': a broken frame is logged in one line, answered when it holds a request, and
        the next message is read as usual."""
        import sys

        from pygls.io_ import StdoutWriter

        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self.read_messages(stdin or sys.stdin.buffer))
        except BrokenPipeError:
            log.error("the client closed the connection")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    async def read_messages(self, stream: Any) -> None:
        loop = asyncio.get_running_loop()
        chunks: "asyncio.Queue[bytes]" = asyncio.Queue()
        read = getattr(stream, "read1", stream.read)

        def reader() -> None:  # a thread: stdin has no portable non-blocking read
            while True:
                try:
                    chunk = read(1 << 16)
                except (OSError, ValueError):
                    chunk = b""
                try:
                    loop.call_soon_threadsafe(chunks.put_nowait, chunk)
                except RuntimeError:  # the loop is closed: the server is ending
                    return
                if not chunk:
                    return

        threading.Thread(target=reader, name="vjplint-stdin", daemon=True).start()
        frames = Frames()
        while not self._stop_event.is_set():
            paused = False
            try:
                if frames.waiting:
                    chunk = await asyncio.wait_for(chunks.get(), FRAME_PAUSE_S)
                else:
                    chunk = await chunks.get()
                frames.feed(chunk)
            except asyncio.TimeoutError:
                paused = True
            while not self._stop_event.is_set():
                frame = frames.next(paused)
                if frame is None:
                    break
                self.handle_frame(frame.body, frame.problem)
            if frames.eof:
                return

    def handle_frame(self, body: bytes, problem: Optional[str]) -> None:
        """Decode and dispatch one message; what cannot be is logged in one line, and a request
        whose id can be read gets an error answer (JSON-RPC's parse error)."""
        from pygls.exceptions import JsonRpcParseError

        broken = f"broken message from the client: {problem}" if problem is not None else None
        if not body.strip():
            log.warning("%s", broken or "an empty message from the client")
            return
        try:
            message = json.loads(body, object_hook=self.protocol.structure_message)
        except ValueError as exc:  # not JSON, or not UTF-8
            msg_id = request_id(body)
            log.warning("%s%s", f"{broken}; " if broken else "", f"unreadable message from the client "
                        f"({_first_line(exc)})" + (f", answered as an error to request {msg_id!r}"
                                                  if msg_id is not None else ""))
            if msg_id is not None:
                self.protocol._send_response(msg_id, error=JsonRpcParseError(
                    f"vjplint could not read this message: {_first_line(exc)}").to_response_error())
            return
        except Exception as exc:  # noqa: BLE001 (the server goes on)
            cause = (exc.__cause__ or exc) if isinstance(exc, JsonRpcException) else exc
            log.warning("%smessage from the client not understood: %s: %s", f"{broken}; " if broken else "",
                        type(cause).__name__, _first_line(cause))
            return
        if broken:
            log.warning("%s; read as %s", broken, _describe(message))
        if isinstance(message, _Dropped):  # answered already (invalid params)
            return
        if not hasattr(message, "jsonrpc"):
            log.warning("message from the client is not JSON-RPC 2.0: %.200s", body.decode("utf-8", "replace"))
            return
        try:
            self.protocol.handle_message(message)
        except Exception as exc:  # noqa: BLE001
            log.warning("message from the client failed: %s: %s", type(exc).__name__, _first_line(exc))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log, rather than pop up a message for every bad message a client sends."""
        log.error("%s: %s", getattr(source, "__name__", source), error)

    # -- configuration -----------------------------------------------------------------
    def reset_configuration(self) -> None:
        with self.lock:
            self.project = None
            self.reset_index()
            self.analyses.clear()
            self.linters.clear()
            self.reported_config_errors.clear()

    def config_for(self, path: Optional[Path], wait: float = 0.0) -> Tuple[Config, RunFacts]:
        """The settings of a document: resolved by the same workspace layer as the command line
        (each file's nearest [tool.vjplint], or the client's explicit configuration), with the
        client's rule selection on top; beside them, what the run derives about it: its folder's
        wrappers and what the folder's other modules pass to, register on and call in it
        (vjplint.server.indexing; the first lint of a folder waits `wait` seconds for them at
        most). A broken configuration is reported and the defaults used."""
        with self.lock:
            if self.project is None:
                explicit = self.settings.configuration
                overrides = Overrides(select=self.settings.select, ignore=self.settings.ignore,
                                      extend_select=self.settings.extend_select)
                try:
                    self.project = Workspace(overrides, os.path.expanduser(explicit) if explicit else None)
                except ConfigError as exc:
                    self.config_error(f"vjplint settings: {exc}")
                    self.project = Workspace()
            directory = path.parent if path is not None else self.workspace_root()
            try:
                config = self.project.settings_for_dir(str(directory) if directory is not None else os.getcwd())
            except ConfigError as exc:
                self.config_error(str(exc))
                return Config(), NO_FACTS
        folder = self.folder_of(path) if path is not None else None
        if folder is None or path is None:
            return config, NO_FACTS
        return self.indexed_config(config, folder, path, wait)

    def folder_of(self, path: Path) -> Optional[str]:
        """The workspace folder holding `path` (the innermost), else the root."""
        folders = []
        try:
            folders = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        except Exception:  # not initialized yet
            pass
        root = self.workspace_root()
        inside = [f for f in [*folders, str(root) if root else None]
                  if f and (str(path) + os.sep).startswith(f.rstrip(os.sep) + os.sep)]
        return max(inside, key=len) if inside else None

    def refresh_pulls(self) -> None:
        if _capability(self.client_capabilities, "workspace", "diagnostics", "refresh_support"):
            self.workspace_diagnostic_refresh(None)

    def refresh_wrappers(self, uri: str) -> None:
        """After a Python file is saved: rebuild its folder's wrappers in the background; the
        open documents whose settings change are then linted again (Indexing.refresh_folder)."""
        path = _path(uri)
        folder = self.folder_of(path) if path is not None else None
        if folder is not None and folder in self.wrappers:
            self.start_index(folder, facts=False, again=True)

    def config_error(self, message: str) -> None:
        log.error("%s", message)
        if message not in self.reported_config_errors:
            self.reported_config_errors.add(message)
            self.call_soon(self.window_show_message, types.ShowMessageParams(
                type=types.MessageType.Error, message=f"vjplint: {message} (using the default settings)"))

    def workspace_root(self) -> Optional[Path]:
        try:
            root = self.workspace.root_path
        except Exception:  # not initialized yet
            return None
        return Path(root) if root else None

    def call_soon(self, fn: Any, *args: Any) -> None:
        """Send from the event loop's thread, whatever thread we are on (pygls' writer is not
        thread-safe)."""
        loop = self.event_loop
        if loop is None or threading.get_ident() == self.loop_thread:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    # -- analysis ----------------------------------------------------------------------
    def analyse(self, uri: str, text: str, should_stop: Optional[Any] = None, publishing: bool = False) -> Analysis:
        """Lint `text` as the document `uri` (cached while the text is unchanged), incrementally:
        only the families of statements an edit touched are linted again (vjplint.lint.incremental).
        Runs in the lint thread; `should_stop()` true (a newer version, a cancelled request)
        raises Superseded between families. The lock guards the caches only. `publishing`: the
        caller sends the diagnostics and then calls `answered`, which frees a whole lint's model
        (`free_kept`): freeing it first would delay them."""
        self.free_kept()  # one a lint left (its diagnostics were never sent: closed meanwhile)
        with self.lock:
            cached = self.analyses.get(uri)
            if cached is not None and cached.text == text:
                return cached
            path = _path(uri)
        config, facts = self.config_for(path, INDEX_WAIT_S)
        filename = _display_name(uri, path, config, self.workspace_root())
        if path is not None and _excluded(path, config):
            analysis = Analysis(text, [], config, filename, str(path), facts=facts)
        else:
            linter = self.linters.get(uri)
            where = str(path) if path is not None else None
            if linter is None or (linter.filename, linter.path) != (filename, where) or \
                    (linter.config, linter.facts) != (config, facts):
                linter = self.linters[uri] = IncrementalLinter(filename, config, where, facts=facts,
                                                               session=self.session)
            share = lambda: self.shared_first_lint(uri, text, filename, where, config, facts)  # noqa: E731
            held: List[object] = []
            with collector_paused():
                result = linter.lint(text, should_stop, whole_first=True, split=share,
                                     keep=held if publishing else None)
                if held:  # the collector stays paused until it is freed: a scan of it would cost more
                    pause_collector()
                    self.kept.append(held)
            if linter.unprimed:  # linted whole: its families once the diagnostics are out
                self.to_prime[uri] = (linter, text)
            # Copies: a quick fix's edits (attach_fixes) hold for this text only, not for the
            # linter's cached findings (whether a fix drops an import depends on other statements).
            diagnostics = [_copy(d) for d in result.diagnostics]
            analysis = Analysis(text, diagnostics, config, filename, str(path) if path is not None else None,
                                errors=result.errors, facts=facts)
            self.mark_named_elsewhere(analysis)
            for error in result.errors:
                log.error("%s", error)
        with self.lock:
            self.analyses[uri] = analysis
        return analysis

    # -- the lint helper (vjplint.server.lint_helper) ------------------------------------------
    def shared_first_lint(self, uri: str, text: str, filename: str, where: Optional[str], config: Config,
                          facts: RunFacts = NO_FACTS) -> Any:
        """In the lint thread, for a document's first (whole) lint: the rules the helper runs
        meanwhile (engine.RuleSplit), None to lint it all here (no helper, a small document,
        the helper busy). The share sent at didOpen (`share_early`) is taken if it was for
        this text and these settings."""
        early = self.early_shares.pop(uri, None)
        if early is not None and early.text == text:
            early.ready.wait(INDEX_WAIT_S + 1.0)
            if early.split is not None and early.key == (filename, where, config, facts):
                return early.split
        helper = self.helper
        if helper is None or not _big(text):
            return None
        return helper.split(filename, text, config, where, facts=facts)

    def share_early(self, uri: str, text: str) -> None:
        """On the event loop, at didOpen in a server that just started (its lint thread still
        importing the engine): send a big document to the helper now, from another thread
        (its settings wait for the folder's index), so that the helper lints while this
        process finishes its imports; the lint thread takes the share (`shared_first_lint`)."""
        if self.helper is None or self.engine_warm.is_set() or uri in self.analyses or not _big(text):
            return
        early = self.early_shares[uri] = _EarlyShare(text)
        threading.Thread(target=self._send_early, args=(uri, early), name="vjplint-helper-early",
                         daemon=True).start()

    def _send_early(self, uri: str, early: "_EarlyShare") -> None:
        try:
            path = _path(uri)
            config, facts = self.config_for(path, INDEX_WAIT_S)
            if path is not None and _excluded(path, config):
                return
            filename = _display_name(uri, path, config, self.workspace_root())
            where = str(path) if path is not None else None
            early.key = (filename, where, config, facts)
            if self.helper is not None:
                early.split = self.helper.split(filename, early.text, config, where, AHEAD_FAMILY, facts=facts)
                if early.split is not None:
                    self.helper.at_open += 1
        except Exception:
            log.exception("sharing %s with the lint helper failed", uri)
        finally:
            early.ready.set()

    def free_kept(self) -> None:
        """In the lint thread: free the models whole lints kept (`analyse`), then let the
        collector run again."""
        while self.kept:
            self.kept.pop().clear()
            resume_collector()

    def answered(self) -> None:
        """After diagnostics went out: the work that waited for them (families to prime, the
        project facts, Indexing._build) may use the interpreter now."""
        self.first_analysis.set()
        if self.kept:
            self.executor.submit(self.free_kept)
        while self.to_prime:
            uri, (linter, text) = self.to_prime.popitem()
            self.executor.submit(self.prime, uri, linter, text)

    def prime(self, uri: str, linter: IncrementalLinter, text: str) -> None:
        """In the lint thread: the families of a document linted whole (its first lint), so that
        an edit re-lints only its own; their findings are read off that lint (a tenth of the
        lint's time), or, where they cannot be, linted. Any other work waiting for the lint
        thread goes first: it stops such linting between two families (after one at least: two
        documents' primings waiting for each other would go on forever), and this goes on after it."""
        analysis = self.analyses.get(uri)
        if self.linters.get(uri) is not linter or not linter.unprimed or analysis is None or analysis.text != text:
            return  # closed, edited, or its settings changed
        waiting = getattr(self.executor, "_work_queue", None)
        families = [0]

        def stop() -> bool:  # asked before each family to lint
            families[0] += 1
            return uri in self.queued or (families[0] > 1 and waiting is not None and not waiting.empty())
        try:
            with collector_paused():
                linter.prime(text, stop)
        except Superseded:
            if uri not in self.queued:  # the document's own lint would do it anyway
                self.executor.submit(self.prime, uri, linter, text)
        except Exception:
            log.exception("linting %s failed", uri)

    def attach_fixes(self, analysis: Analysis, uri: str, wanted: Sequence[Diagnostic]) -> None:
        """Fill the fix edits (libcst) of the `wanted` diagnostics, only when an action needs them,
        each computed on its family of statements alone (vjplint.server.fixes) when that is safe."""
        todo = [d for d in wanted if d.fix is not None and not d.fix.resolved and d.fix.plan is not None]
        if not todo:
            return

        linter = self.linters.get(uri)
        try:
            attach_family_fixes(todo, analysis.text, analysis.filename, analysis.config,
                                linter if linter is not None and linter.current(analysis.text) else None,
                                analysis.facts)
        except Exception as exc:  # no fix machinery, or it failed: actions without edits
            log.error("cannot compute fixes for %s: %s: %s", analysis.filename, type(exc).__name__, exc)

    def mark_named_elsewhere(self, analysis: Analysis) -> None:
        """As the command line does for the files of its run: a residual-plus-None fix whose fwd or
        bwd another module of the workspace index names (a test importing `clip_fwd`) becomes
        unsafe, and its finding says why (vjplint.fixes.named_elsewhere): the quick fix is still
        offered, titled with the reason, never preferred and never part of fix-all. At the lint;
        the index and the other modules may change later: `named_elsewhere_changed`."""
        analysis.residual_plans = tuple(residual_plans(analysis.diagnostics))
        reasons = self.named_elsewhere_of(analysis)
        if reasons is None:
            return
        analysis.named_checked = True
        if reasons:
            mark_unsafe(analysis.diagnostics, reasons, targets_in(analysis.text, analysis.config, analysis.facts))
            analysis.named_elsewhere = reasons

    def named_elsewhere_of(self, analysis: Analysis) -> Optional[Dict[str, str]]:
        """{custom_vjp: reason} for the analysis's residual fixes that another module of its folder
        names; None while the folder has no index (or the document is no file)."""
        if analysis.path is None or not analysis.residual_plans:
            return {} if analysis.path is not None else None
        folder = self.folder_of(Path(analysis.path))
        facts = self.facts.get(folder) if folder is not None else None
        if facts is None:
            return None
        try:
            return named_in_others(Path(analysis.path), analysis.text, analysis.config, analysis.residual_plans,
                                   facts.modules(), analysis.facts)
        except Exception as exc:
            log.error("cannot check other modules for %s: %s: %s", analysis.filename, type(exc).__name__, exc)
            return None

    def named_elsewhere_changed(self, analysis: Analysis) -> bool:
        """Whether another module's use of the rules changed since the lint (an index built since, a
        test that now imports clip_fwd or no longer does): then the lint is redone."""
        if not analysis.residual_plans:
            return False
        now = self.named_elsewhere_of(analysis)
        return now is not None and (not analysis.named_checked or now != analysis.named_elsewhere)

    def current_analysis(self, uri: str, text: str, should_stop: Optional[Any] = None) -> Analysis:
        """`analyse` for an action: linted again when the other modules' use of its rules changed,
        and then published again too (the findings say whether their fix is unsafe, and why: the
        index's own re-check, `recheck_named_elsewhere`, finds this analysis current)."""
        analysis = self.analyse(uri, text, should_stop)
        if self.named_elsewhere_changed(analysis):
            with self.lock:
                if self.analyses.get(uri) is analysis:
                    self.analyses.pop(uri, None)
            analysis = self.analyse(uri, text, should_stop)
            if uri in self.versions:
                self.call_soon(self.schedule, uri, 0)
        return analysis

    def fix_all_text(self, analysis: Analysis, unsafe: bool) -> Optional[str]:
        """`vjplint --fix` on the buffer (cached per text: clients ask on every cursor move), without
        the fixes made unsafe because another module names their rules, even with `unsafeFixes`:
        fix-all (often run on save) never breaks another module; their quick fix applies them."""
        if unsafe not in analysis.fixed_text:
            try:
                new_text: Optional[str] = fix_text(analysis.filename, analysis.text, analysis.config, unsafe,
                                                   exclude=tuple(analysis.named_elsewhere), path=analysis.path,
                                                   facts=analysis.facts).text
            except Exception as exc:
                log.error("fix-all failed for %s: %s: %s", analysis.filename, type(exc).__name__, exc)
                new_text = None
            analysis.fixed_text[unsafe] = new_text
        return analysis.fixed_text[unsafe]

    def too_big_to_lint_on_change(self, uri: str) -> bool:
        """Whether an open document is over `lintOnChangeMaxSize`: then it is linted when opened
        and saved only (its text then kept in `save_only` for pulls), and its user told so once.
        A one-line edit of a 10 MB module costs seconds to lint again: typing would queue lints
        behind each other (docs/performance.md, "Big documents")."""
        limit = self.settings.lint_on_change_max_size
        text = self.document(uri)
        if text is None or limit <= 0 or len(text) <= limit:
            self.save_only.pop(uri, None)
            return False
        if uri not in self.save_only:
            self.save_only[uri] = text
        if uri not in self.told_save_only:
            self.told_save_only.add(uri)
            name = _path(uri).name if _path(uri) is not None else uri
            self.call_soon(self.window_show_message, types.ShowMessageParams(
                type=types.MessageType.Info, message=(
                    f"vjplint: {name} is {_size(len(text))}, over lintOnChangeMaxSize "
                    f"({limit:,}): it is linted when opened and saved, not at each edit")))
        return True

    def document(self, uri: str) -> Optional[str]:
        if uri not in self.versions:
            return None
        return self.workspace.get_text_document(uri).source

    def version_of(self, uri: str) -> Optional[int]:
        """The version of an open document or notebook (None when it is not open)."""
        return self.versions.get(uri, self.notebook_versions.get(uri))

    def buffer_text(self, uri: str) -> Optional[str]:
        """The text of an open document, or a notebook's code cells as one module (None when it
        is not open)."""
        if uri in self.notebook_versions:
            joined = self.notebook_joined(uri)
            return joined.text if joined is not None else None
        return self.document(uri)

    def notebook_joined(self, uri: str) -> Any:
        """An open notebook's code cells as one module (vjplint.server.notebooks.NotebookText)."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return None
        cells = []
        for cell in notebook.cells:
            document = self.workspace.text_documents.get(cell.document)
            python = cell.kind == types.NotebookCellKind.Code and document is not None and \
                document.language_id in (None, "python")
            cells.append((cell.document, python, document.source if document is not None else ""))
        return notebook_text(cells)

    def lintable(self, uri: str) -> bool:
        doc = self.workspace.get_text_document(uri)
        return doc.language_id == "python" or uri.endswith(PYTHON_SUFFIXES)

    def encoding(self) -> str:
        try:
            value = self.workspace.position_encoding
        except Exception:
            return lspfmt.UTF16
        return str(getattr(value, "value", value) or lspfmt.UTF16)

    def lsp_dicts(self, analysis: Analysis) -> List[Dict[str, Any]]:
        """The diagnostics as LSP JSON (what vjplint.output.lsp writes)."""
        lines = source_lines(analysis.text)
        encoding = self.encoding()
        docs_url = links.docs_url(analysis.config.docs_url)
        return [lspfmt.diagnostic_to_lsp(d, lines, encoding, docs_url) for d in analysis.diagnostics]

    def lsp_diagnostics(self, analysis: Analysis) -> List[types.Diagnostic]:
        return [self.converter.structure(d, types.Diagnostic) for d in self.lsp_dicts(analysis)]

    def publish(self, uri: str, version: Optional[int], diagnostics: List[Dict[str, Any]]) -> None:
        """publishDiagnostics written as JSON directly: through lsprotocol's classes and back
        (cattrs) costs more than the lint of an edit on a large file."""
        writer = getattr(self.protocol, "writer", None)
        if writer is None:
            return
        params: Dict[str, Any] = {"uri": uri, "diagnostics": diagnostics}
        if version is not None:
            params["version"] = version
        body = json.dumps({"jsonrpc": "2.0", "method": types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
                           "params": params}).encode("utf-8")
        written = writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        if inspect.isawaitable(written):  # pygls' asyncio writers
            asyncio.ensure_future(written)

    # -- push diagnostics --------------------------------------------------------------
    def schedule(self, uri: str, delay_ms: int) -> None:
        """Lint `uri` soon. Bursts of edits coalesce without a delay: while a lint of the document
        waits for the lint thread, no other is queued (it reads the newest text when it starts),
        and a running lint of a superseded version stops between families of statements."""
        if uri not in self.notebook_versions and (self.pull or not self.lintable(uri)):
            return
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        if delay_ms <= 0:
            self.enqueue(uri)
        else:
            self.pending[uri] = asyncio.get_running_loop().call_later(delay_ms / 1000, self.enqueue, uri)

    def enqueue(self, uri: str) -> None:
        self.pending.pop(uri, None)
        if uri not in self.queued:
            self.queued.add(uri)
            asyncio.ensure_future(self.lint_and_publish(uri))

    def lint_current(self, uri: str) -> Optional[Tuple[Optional[int], List[Dict[str, Any]]]]:
        """In the lint thread: the newest version of `uri` and its diagnostics (None if closed)."""
        self.queued.discard(uri)  # from now on an edit queues another lint
        version = self.versions.get(uri)  # the version first: a newer text is then never published as it
        text = self.document(uri)
        if text is None:
            return None
        analysis = self.analyse(uri, text, lambda: self.versions.get(uri) != version, publishing=True)
        return version, self.lsp_dicts(analysis)

    def lint_notebook(self, uri: str) -> Optional[Tuple[int, Dict[str, List[Dict[str, Any]]]]]:
        """In the lint thread: the newest version of notebook `uri` and its diagnostics per cell."""
        self.queued.discard(uri)
        version = self.notebook_versions.get(uri)
        joined = self.notebook_joined(uri) if version is not None else None
        if joined is None:
            return None
        analysis = self.analyse(uri, joined.text, lambda: self.notebook_versions.get(uri) != version, publishing=True)
        encoding = self.encoding()
        docs_url = links.docs_url(analysis.config.docs_url)
        return version, {cell_uri: [lspfmt.diagnostic_to_lsp(d, joined.cell_lines[cell_uri], encoding, docs_url)
                                    for d in found]
                         for cell_uri, found in per_cell(analysis.diagnostics, joined).items()}

    async def lint_and_publish(self, uri: str) -> None:
        if uri in self.notebook_versions:
            return await self.lint_and_publish_notebook(uri)
        try:
            out = await asyncio.get_running_loop().run_in_executor(self.executor, self.lint_current, uri)
        except Superseded:
            return  # a lint of the newer version is queued
        except Exception:
            self.queued.discard(uri)
            log.exception("linting %s failed", uri)
            return
        if out is None:
            return
        version, diagnostics = out
        if uri not in self.versions or self.versions[uri] != version:
            return  # closed or edited meanwhile: a newer lint is queued
        self.publish(uri, version, diagnostics)
        self.answered()
        if not self.fixes_warmed:  # libcst takes a second to import: not in the first quick fix,
            if self.warm_timer is not None:  # nor while the user types (it would share the GIL)
                self.warm_timer.cancel()
            self.warm_timer = asyncio.get_running_loop().call_later(WARM_FIXES_AFTER_IDLE_S, self.warm_fixes)

    def warm_fixes(self) -> None:
        if not self.fixes_warmed and not self.queued:
            self.fixes_warmed = True
            threading.Thread(target=_import_fixes, name="vjplint-warm-fixes", daemon=True).start()

    async def lint_and_publish_notebook(self, uri: str) -> None:
        try:
            out = await asyncio.get_running_loop().run_in_executor(self.executor, self.lint_notebook, uri)
        except Superseded:
            return
        except Exception:
            self.queued.discard(uri)
            log.exception("linting %s failed", uri)
            return
        if out is None or self.notebook_versions.get(uri) != out[0]:
            return
        cells = out[1]
        for gone in set(self.published_cells.get(uri, ())) - set(cells):  # deleted cells, or no longer code
            self.publish(gone, None, [])
        for cell_uri, diagnostics in cells.items():
            self.publish(cell_uri, None, diagnostics)
        self.published_cells[uri] = list(cells)
        self.answered()

    def close_notebook(self, uri: str) -> None:
        self.notebook_versions.pop(uri, None)
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        with self.lock:
            self.analyses.pop(uri, None)
            self.linters.pop(uri, None)
        for cell_uri in self.published_cells.pop(uri, []):
            self.publish(cell_uri, None, [])

    async def in_lint_thread(self, fn: Any, *args: Any) -> Any:
        """Run a request's work in the lint thread; `$/cancelRequest` stops it between families."""
        cancelled = threading.Event()
        future = asyncio.get_running_loop().run_in_executor(self.executor, lambda: fn(*args, cancelled.is_set))
        try:
            return await future
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def relint_all(self) -> None:
        self.reset_configuration()
        for uri in self.notebook_versions:  # notebooks' cells are always pushed
            self.schedule(uri, 0)
        if self.pull:
            if _capability(self.client_capabilities, "workspace", "diagnostics", "refresh_support"):
                self.workspace_diagnostic_refresh(None)
            return
        for uri in self.versions:
            self.schedule(uri, 0)

    # -- code actions ------------------------------------------------------------------
    def code_actions(self, params: types.CodeActionParams,
                     should_stop: Optional[Any] = None) -> List[types.CodeAction]:
        uri = params.text_document.uri
        text = self.document(uri)
        if text is None or not self.lintable(uri):
            return []
        analysis = self.current_analysis(uri, text, should_stop)
        only = params.context.only
        lazy = self.resolve_edits_supported()
        lines = source_lines(text)
        encoding = self.encoding()
        start = lspfmt.from_lsp_position(lines, params.range.start.line, params.range.start.character, encoding)
        end = lspfmt.from_lsp_position(lines, params.range.end.line, params.range.end.character, encoding)
        out: List[types.CodeAction] = []
        if actions.kind_wanted(types.CodeActionKind.QuickFix, only):
            here = [d for d in analysis.diagnostics if actions.overlaps(d, start, end)]
            if not lazy:  # only the fixes of the requested range
                self.attach_fixes(analysis, uri, here)
            for index, d in enumerate(analysis.diagnostics):
                if d not in here or not d.fixable:
                    continue
                if not lazy and not d.fix.resolved:
                    continue
                title = f"{d.code}: {d.fix.message}"
                why = d.fix.unsafe_because
                if why is not None:  # another module would feel it (vjplint.fixes.named_elsewhere)
                    title += f" (unsafe fix: {why})"
                elif d.fix.applicability is Applicability.UNSAFE:
                    title += " (unsafe fix)"
                action = types.CodeAction(
                    title=title, kind=types.CodeActionKind.QuickFix,
                    diagnostics=[self.one_diagnostic(d, lines, encoding, analysis.config.docs_url)],
                    is_preferred=d.fix.applicability is Applicability.SAFE,
                    data={"uri": uri, "action": "quickfix", "index": index, "code": d.code,
                          "row": d.location.row, "column": d.location.column})
                if not lazy:
                    action.edit = self.workspace_edit(uri, [lspfmt.text_edit(lines, e, encoding) for e in d.fix.edits])
                out.append(action)
            if self.settings.disable_rule_comment:
                seen = set()
                for d in here:
                    if d.noqa_row is None or (d.noqa_row, d.code) in seen:
                        continue
                    seen.add((d.noqa_row, d.code))
                    edit = actions.noqa_edit(text, lines, d.noqa_row, d.code)
                    if edit is not None:
                        out.append(types.CodeAction(
                            title=f"Disable {d.code} for this line", kind=types.CodeActionKind.QuickFix,
                            diagnostics=[self.one_diagnostic(d, lines, encoding, analysis.config.docs_url)],
                            edit=self.workspace_edit(uri, [lspfmt.text_edit(lines, edit, encoding)])))
        if self.settings.fix_all and actions.kind_wanted(FIX_ALL_KIND, only) and self.has_fix_all(analysis):
            action = types.CodeAction(title="vjplint: Fix all auto-fixable problems", kind=FIX_ALL_KIND,
                                      data={"uri": uri, "action": "fixAll"})
            if not lazy:
                action.edit = self.fix_all_edit(uri, analysis)
                if action.edit is None:
                    return out
            out.append(action)
        return out

    def has_fix_all(self, analysis: Analysis) -> bool:
        """Whether fix-all has something to apply (never the fixes another module makes unsafe)."""
        return any(d.fix is not None and (d.fix.applicability is Applicability.SAFE or self.settings.unsafe_fixes)
                   and d.fix.unsafe_because is None for d in analysis.diagnostics)

    def one_diagnostic(self, d: Diagnostic, lines: Sequence[str], encoding: str,
                       docs_url: Optional[str] = None) -> types.Diagnostic:
        return self.converter.structure(lspfmt.diagnostic_to_lsp(d, lines, encoding, links.docs_url(docs_url)),
                                        types.Diagnostic)

    def fix_all_edit(self, uri: str, analysis: Analysis) -> Optional[types.WorkspaceEdit]:
        new_text = self.fix_all_text(analysis, self.settings.unsafe_fixes)
        edit = actions.whole_text_edit(analysis.text, new_text) if new_text is not None else None
        if edit is None:
            return None
        lines = source_lines(analysis.text)
        return self.workspace_edit(uri, [lspfmt.text_edit(lines, edit, self.encoding())])

    def workspace_edit(self, uri: str, edits: List[Dict[str, Any]]) -> types.WorkspaceEdit:
        text_edits = [self.converter.structure(e, types.TextEdit) for e in edits]
        if _capability(self.client_capabilities, "workspace", "workspace_edit", "document_changes"):
            identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=self.versions.get(uri))
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(identifier, text_edits)])
        return types.WorkspaceEdit(changes={uri: text_edits})

    def resolve_edits_supported(self) -> bool:
        support = _capability(self.client_capabilities, "text_document", "code_action", "resolve_support")
        return bool(support is not None and "edit" in (support.properties or []))

    def resolve(self, action: types.CodeAction, should_stop: Optional[Any] = None) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        text = self.document(uri) if isinstance(uri, str) else None
        if text is None:
            return action
        analysis = self.current_analysis(uri, text, should_stop)
        if data.get("action") == "fixAll":
            action.edit = self.fix_all_edit(uri, analysis)
        elif data.get("action") == "quickfix":
            target = Position(int(data.get("row", 0)), int(data.get("column", 0)))
            chosen = [d for d in analysis.diagnostics if d.code == data.get("code") and d.location == target]
            self.attach_fixes(analysis, uri, chosen)
            for d in chosen:
                if d.fix and d.fix.edits:
                    lines, encoding = source_lines(text), self.encoding()
                    action.edit = self.workspace_edit(uri, [lspfmt.text_edit(lines, e, encoding) for e in d.fix.edits])
                    break
        return action

    # -- hover: a rule's documentation over its code in a `# noqa:` comment ---------------
    def hover(self, params: types.HoverParams, should_stop: Optional[Any] = None) -> Optional[types.Hover]:
        """In the lint thread, over the document's current analysis (as code actions read it): the
        table may be between an analysis and its re-lint when another module's use of the rules
        changed (`current_analysis`), and a hover then read no finding."""
        text = self.document(params.text_document.uri)
        if text is None:
            return None
        lines = source_lines(text)
        if not 0 <= params.position.line < len(lines):
            return None
        where = lspfmt.from_lsp_position(lines, params.position.line, params.position.character, self.encoding())
        code = actions.noqa_code_at(lines[params.position.line], where.column - 1)

        rule = all_rules().get(code or "")
        if rule is not None:
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=render_rule(rule)))
        # Over a finding: its message, then its rule's documentation (each rule once).
        uri = params.text_document.uri
        analysis = self.current_analysis(uri, text, should_stop) if self.lintable(uri) else None
        found = [d for d in (analysis.diagnostics if analysis else ())
                 if d.code in all_rules() and d.location <= where <= max(d.end_location, d.location)]
        if not found:
            return None
        parts = [f"**{d.code}** {d.message}" for d in found]
        parts += [render_rule(all_rules()[c]) for c in dict.fromkeys(d.code for d in found)]
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)))

    def debug_information(self) -> str:
        import sys

        import gc

        rows = [f"vjplint {__version__} language server", f"python {sys.version.split()[0]}",
                f"objects frozen out of the cyclic collector: {gc.get_freeze_count()}",
                f"diagnostics: {'pull' if self.pull else 'push'}; position encoding: {self.encoding()}",
                f"settings: {self.settings}",
                self.helper.describe() if self.helper is not None else "lint helper: none"]
        for uri in sorted(self.versions):
            analysis = self.analyses.get(uri)
            source = analysis.config.source if analysis else None
            linter = self.linters.get(uri)
            state = "" if linter is None else "; families: priming" if linter.unprimed else \
                f"; families: {linter.stats.get('seeded', 0)} seeded, {linter.stats['linted']} linted, " \
                f"{linter.stats['reused']} reused"
            rows.append(f"{uri}: config {source or '(defaults)'}; "
                        f"{len(analysis.diagnostics) if analysis else '?'} diagnostics{state}")
        return "\n".join(rows)


class _EarlyShare:
    """A first lint sent to the helper at didOpen: the text, then its settings and the share."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ready = threading.Event()
        self.key: Optional[Tuple[str, Optional[str], Config, RunFacts]] = None
        self.split: Optional[Any] = None


FRAME_PAUSE_S = 0.2  # a broken frame is taken as whole once the client sends nothing this long


def _first_line(exc: Any) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _size(characters: int) -> str:
    return f"{characters / 1e6:.1f} million characters" if characters >= 1e6 else f"{characters:,} characters"


def _describe(message: Any) -> str:
    method, msg_id = getattr(message, "method", None), getattr(message, "id", None)
    if method is not None:
        return f"{method!r}" + (f" (request {msg_id!r})" if msg_id is not None else "")
    return "a response" if msg_id is not None else "something else"


def _clamped(lines: Sequence[str], rng: types.Range, codec: Any) -> types.Range:
    """`rng` within the document: lines past the end go to its end, characters past a line's end
    to that end (LSP), and a start after the end swaps with it."""

    def clamp(pos: types.Position) -> types.Position:
        line = min(max(pos.line, 0), len(lines))
        if line == len(lines):
            return types.Position(line=line, character=0)
        width = codec.client_num_units(lines[line].rstrip("\r\n"))
        return types.Position(line=line, character=min(max(pos.character, 0), width))

    start, end = clamp(rng.start), clamp(rng.end)
    if (start.line, start.character) > (end.line, end.character):
        start, end = end, start
    return types.Range(start=start, end=end)


def _range_text(rng: types.Range) -> str:
    return f"{rng.start.line}:{rng.start.character}-{rng.end.line}:{rng.end.character}"


def _big(text: str) -> bool:
    return text.count("\n") + 1 >= SPLIT_MIN_LINES


def _copy(d: Diagnostic) -> Diagnostic:
    copy = object.__new__(Diagnostic)  # field by field, 5x cheaper than dataclasses.replace
    copy.__dict__.update(d.__dict__)
    return copy


def _capability(root: Any, *names: str) -> Any:
    for name in names:
        root = getattr(root, name, None)
        if root is None:
            return None
    return root


def _display_name(uri: str, path: Optional[Path], config: Config, root: Optional[Path]) -> str:
    """The name per-file-ignores match against: relative to the project (as on the CLI)."""
    if path is None:
        return uri
    for base in (config.root, root):
        if base:
            try:
                return path.relative_to(base).as_posix()
            except ValueError:
                continue
    return path.as_posix()


def _excluded(path: Path, config: Config) -> bool:
    if not config.root:
        return False

    root = Path(config.root)
    patterns = tuple(config.exclude) + tuple(config.extend_exclude)
    try:
        inside = path.relative_to(root)
    except ValueError:
        return False
    parents = [root / p for p in list(inside.parents)[:-1]]
    return excluded(path, root, patterns) or any(excluded(p, root, patterns) for p in parents)


WARM_FIXES_AFTER_IDLE_S = 2.0


_PAUSE_LOCK = threading.Lock()
_PAUSES = [0, False]  # lints running now, and whether the collector ran before the first


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a lint runs, as the command line's workers pause
    it (vjplint.batch.parallel._lint): a module's `ast` tree is many young objects the collector
    would scan again and again (a fifth of the first lint of a 10,000-line module). Counted, so
    that threads linting at once (a document's lint, another's priming) restore it once, last."""
    pause_collector()
    try:
        yield
    finally:
        resume_collector()


def pause_collector() -> None:
    import gc

    with _PAUSE_LOCK:
        if _PAUSES[0] == 0:
            _PAUSES[1] = gc.isenabled()
            gc.disable()
        _PAUSES[0] += 1


def resume_collector() -> None:
    import gc

    with _PAUSE_LOCK:
        _PAUSES[0] -= 1
        if _PAUSES[0] == 0 and _PAUSES[1]:
            gc.enable()


def _warm_up(server: Optional["VjplintServer"] = None) -> None:
    """Import what linting needs (rules, model, facts) by linting a small module."""
    try:
        lint_source("warm_up.py", WARM_UP, Config())
    except Exception:
        log.exception("warm-up failed")
    import gc

    gc.freeze()  # the modules the engine imported, as vjplint.server freezes the server's own
    if server is not None:
        server.engine_warm.set()


def _import_fixes() -> None:
    try:
        import vjplint.fixes.apply  # noqa: F401
        import vjplint.fixes.residual_plus_none  # noqa: F401  (libcst)
    except Exception:
        log.info("no fix machinery: quick fixes will have no edits")


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


def create_server(debounce_ms: Optional[int] = None, helper: Optional[LintHelper] = None) -> VjplintServer:
    server = VjplintServer(debounce_ms)
    server.helper = helper

    @server.feature(types.INITIALIZE)
    def initialize(ls: VjplintServer, params: types.InitializeParams) -> None:
        ls.event_loop, ls.loop_thread = asyncio.get_event_loop(), threading.get_ident()
        # The engine's imports, in the lint thread, from now: while the client reads the answer
        # and sends `initialized` and its open documents.
        ls.executor.submit(_warm_up, ls)
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
        if ls.lintable(params.text_document.uri):
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
                ls.save_only[uri] = ls.document(uri) or ""
            ls.schedule(uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @_guard
    def did_close(ls: VjplintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.versions.pop(uri, None)
        ls.early_shares.pop(uri, None)
        ls.save_only.pop(uri, None)
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
        analysis = await ls.in_lint_thread(lambda stop: ls.analyse(uri, text, stop, publishing=True))
        report = types.RelatedFullDocumentDiagnosticReport(items=ls.lsp_diagnostics(analysis))
        asyncio.get_running_loop().call_soon(ls.answered)  # once the answer is written
        return report

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
        resolve_provider=True))
    async def code_action(ls: VjplintServer, params: types.CodeActionParams):
        return await ls.in_lint_thread(ls.code_actions, params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: VjplintServer, params: types.CodeAction):
        return await ls.in_lint_thread(ls.resolve, params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: VjplintServer, params: types.HoverParams):
        return await ls.in_lint_thread(ls.hover, params)

    @server.command(CMD_FIX_ALL)
    async def apply_autofix(ls: VjplintServer, *args: Any):
        target = args[0] if args and isinstance(args[0], dict) else {}
        uri = target.get("uri")
        text = ls.document(uri) if isinstance(uri, str) else None
        if text is None:
            raise ValueError(f"{CMD_FIX_ALL} needs an open document: [{{\"uri\": ...}}]")
        edit = await ls.in_lint_thread(lambda stop: ls.fix_all_edit(uri, ls.analyse(uri, text, stop)))
        if edit is not None:
            ls.workspace_apply_edit(types.ApplyWorkspaceEditParams(edit=edit, label="vjplint: Fix all"))
        return None

    @server.command(CMD_DEBUG)
    def debug(ls: VjplintServer, *args: Any) -> str:
        info = ls.debug_information()
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=info))
        return info

    return server
