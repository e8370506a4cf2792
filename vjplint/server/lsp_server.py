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

The server in parts, each mixed into `VjplintServer`:
- `vjplint.server.state`: settings, open documents, each file's configuration (DocumentState);
- `vjplint.server.analysis`: a document's lint, shared with the lint helper, its fixes (Analyses);
- `vjplint.server.scheduling`: when lints and requests' work run, and where (Scheduling);
- `vjplint.server.queries`: code actions, resolve, hover, debug information (Queries);
- `vjplint.server.transport`: reading frames, pygls' protocol amended, publishing (Transport);
- `vjplint.server.indexing`: the per-folder project index (Indexing);
- `vjplint.server.handlers`: the LSP handlers that call them.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Tuple

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter

from vjplint import __version__
from vjplint.lint.session import LintSession
from vjplint.lint.incremental import IncrementalLinter
from vjplint.server.indexing import Indexing
from vjplint.server.lint_helper import LintHelper
from vjplint.project.workspace import Workspace
from vjplint.server.analysis import Analyses
from vjplint.server.far import FarAnalysis
from vjplint.server.queries import Queries
from vjplint.server.scheduling import Scheduling
from vjplint.server.state import Analysis, DocumentState, Settings, _EarlyShare
from vjplint.server.transport import Transport, VjplintProtocol
from vjplint.server import handlers


class VjplintServer(Transport, DocumentState, Analyses, Scheduling, Queries, Indexing, LanguageServer):
    """The server: its parts are mixed in (each module says what it does); the handlers that
    call them are registered by `vjplint.server.handlers`."""

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
        # documents over BIG_LINT_CHARS and up to the size limit: their lints and primings, so
        # that no other document's lint queues behind them (vjplint.server.scheduling)
        self.big_lints = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vjplint-big-lint")
        self.project: Optional[Workspace] = None  # settings per file (vjplint.project.workspace), reset on a change
        self.init_indexing()  # per workspace folder: wrappers and cross-module facts (vjplint.server.indexing)
        self.reported_config_errors: set = set()
        self.save_only: Dict[str, str] = {}  # big documents (linted on open and save): uri -> the text linted
        self.save_only_versions: Dict[str, Optional[int]] = {}  # uri -> the version of that text
        self.far = FarAnalysis()  # their lints and fixes, in a process of their own (vjplint.server.far)
        self.far_lints = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vjplint-far")
        self.far_requests = ThreadPoolExecutor(max_workers=REQUEST_THREADS, thread_name_prefix="vjplint-far-requests")
        self.requests = ThreadPoolExecutor(max_workers=REQUEST_THREADS, thread_name_prefix="vjplint-request")
        self.document_locks: Dict[str, threading.RLock] = {}  # uri -> its analyses one at a time
        self.waiting_for: Dict[str, int] = {}  # uri -> threads waiting for its lock (a priming gives way)
        self.told_save_only: set = set()  # the documents whose user was told so
        self.pull = False
        self.converter = default_converter()
        self.event_loop: Optional[asyncio.AbstractEventLoop] = None
        self.loop_thread: Optional[int] = None


REQUEST_THREADS = 4  # requests on documents up to the size limit, on as many documents at once


def create_server(debounce_ms: Optional[int] = None, helper: Optional[LintHelper] = None) -> VjplintServer:
    server = VjplintServer(debounce_ms)
    server.helper = helper
    handlers.register(server)
    return server
