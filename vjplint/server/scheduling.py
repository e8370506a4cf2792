"""When work runs: lints queued per document (coalesced, superseded ones stopped), published
when done; requests' work off the event loop, in one of these threads:
- the lint thread: documents up to `lintOnChangeMaxSize`, linted here (incrementally), their
  families primed, the project index's updates;
- the big lint thread: the same for documents over BIG_LINT_CHARS (and up to the limit), so
  that a small document's lint never queues behind theirs (a 5 MB document under a raised
  limit delayed a small one's diagnostics to 26 s; in a thread of its own: docs/performance.md);
- the requests' threads: requests on those documents (code actions, resolve, hover, pulls),
  each document's work one at a time (Analyses.document_lock), so a request on one document
  never queues behind another document's lint (they share the interpreter, not a queue);
- the far thread: big documents' lints, run in the far process (vjplint.server.far) while this
  thread waits on its pipe, so the interpreter stays free for everything else;
- the far requests' thread: requests on big documents, answered from their last analysis (a
  fix's edits are computed in the far process, after its lint).
A request or a lint on one document thus never waits for a big document's analysis, and a
`$/cancelRequest` is answered by the event loop at once (the work stops at its next check,
between two families of statements, or, in the far process, by ending that process)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import Any, Dict, List, Optional, Tuple


from vjplint.lint.incremental import Superseded
from vjplint import links
from vjplint.output import lsp as lspfmt
from vjplint.server.notebooks import per_cell
from vjplint.server.analysis import _import_fixes
from vjplint.server.state import _capability

log = logging.getLogger("vjplint.server")


WARM_FIXES_AFTER_IDLE_S = 2.0


def _now(fn: Any, *args: Any) -> Any:
    return fn(*args)


def _held(fn: Any, *args: Any) -> Any:
    """`fn(*args)` once the file VJPLINT_BIG_LINT_WAIT_FOR names exists, if it is set (tests:
    a big document's lint held as long as the test needs, whatever the machine's speed)."""
    path = os.environ.get("VJPLINT_BIG_LINT_WAIT_FOR")
    while path and not os.path.exists(path):
        time.sleep(0.02)
    return fn(*args)


class Scheduling:
    """Mixed into VjplintServer: lints and requests' work, off the event loop."""

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
        if self.far_document(uri):  # the text opened or saved, whatever was typed since
            text, version = self.save_only.get(uri), self.save_only_versions.get(uri)
            if text is None or uri not in self.versions:
                return None
            analysis = self.analyse(uri, text, lambda: uri in self.queued or uri not in self.versions, publishing=True)
            return version, self.lsp_dicts(analysis)
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
        far = self.far_document(uri)
        executor = self.far_lints if far else self.lint_executor(self.document(uri))
        try:
            out = await asyncio.get_running_loop().run_in_executor(
                executor, _held if executor is self.big_lints else _now, self.lint_current, uri)
        except Superseded:
            return  # a lint of the newer version is queued
        except Exception:
            self.queued.discard(uri)
            log.exception("linting %s failed", uri)
            return
        if out is None:
            return
        version, diagnostics = out
        if uri not in self.versions or (self.versions[uri] != version and not far):
            return  # closed or edited meanwhile: a newer lint is queued (a big document's: at its save)
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

    async def in_lint_thread(self, fn: Any, *args: Any, uri: Optional[str] = None) -> Any:
        """Run a request's work in a requests' thread (the far requests' thread for a big
        document, `uri`); `$/cancelRequest` stops it between families (in the far process: at once)."""
        cancelled = threading.Event()
        executor = self.far_requests if isinstance(uri, str) and self.far_document(uri) else self.requests
        future = asyncio.get_running_loop().run_in_executor(executor, lambda: fn(*args, cancelled.is_set))
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
