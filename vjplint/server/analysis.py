"""A document's analysis: its lint (incremental, shared with the lint helper for a big first
lint), the fixes its actions need, and what other modules of the workspace say of its fixes."""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.diagnostics import Diagnostic
from vjplint.lint.incremental import IncrementalLinter, Superseded
from vjplint.server.indexing import INDEX_WAIT_S, uri_path as _path
from vjplint.server.lint_helper import AHEAD_FAMILY, WARM_UP
from vjplint.fixes.apply import fix_text
from vjplint.fixes.named_elsewhere import mark_unsafe, named_in_others, residual_plans, targets_in
from vjplint.lint.engine import lint_source
from vjplint.server.far import FarFailed, Reader
from vjplint.server.fixes import attach_family_fixes
from vjplint.server.state import Analysis, _EarlyShare, _big, _copy, _display_name, _excluded

# Documents longer than this (up to the size limit) are linted and primed in the big lint
# thread: about half a second of a fresh lint of dense custom_vjp code (benchmarks/big_file.py:
# about 6 µs a character), more than a small document's lint should wait for.
BIG_LINT_CHARS = 100_000

log = logging.getLogger("vjplint.server")


class Analyses:
    """Mixed into VjplintServer: analyses, run off the event loop (vjplint.server.scheduling)."""

    # -- analysis ----------------------------------------------------------------------
    def analyse(self, uri: str, text: str, should_stop: Optional[Any] = None, publishing: bool = False) -> Analysis:
        """Lint `text` as the document `uri` (cached while the text is unchanged), incrementally:
        only the families of statements an edit touched are linted again (vjplint.lint.incremental).
        Runs off the event loop, one at a time per document (`document_lock`); `should_stop()`
        true (a newer version, a cancelled request) raises Superseded between families (a big
        document's: at once, in the far process). `self.lock` guards the caches only. `publishing`: the
        caller sends the diagnostics and then calls `answered`, which frees a whole lint's model
        (`free_kept`): freeing it first would delay them."""
        self.free_kept()  # one a lint left (its diagnostics were never sent: closed meanwhile)
        if self.far_document(uri):  # no linter here: the far process takes one request at a time
            return self._analyse(uri, text, should_stop, publishing)
        with self.document_lock(uri, should_stop):
            return self._analyse(uri, text, should_stop, publishing)

    def _analyse(self, uri: str, text: str, should_stop: Optional[Any], publishing: bool) -> Analysis:
        with self.lock:
            cached = self.analyses.get(uri)
            if cached is not None and cached.text == text:
                return cached
            path = _path(uri)
        if self.far_document(uri):
            return self.analyse_far(uri, text, path, should_stop)
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
        return self._store(uri, path, analysis)

    @contextmanager
    def document_lock(self, uri: str, should_stop: Optional[Any] = None) -> Iterator[None]:
        """One document's analyses, primings and fixes one at a time (its IncrementalLinter is
        not shared); other documents' go on meanwhile (`waiting_for` counts who waits here).
        `should_stop()` true while waiting raises Superseded (a cancelled request)."""
        with self.lock:
            lock = self.document_locks.setdefault(uri, threading.RLock())
            self.waiting_for[uri] = self.waiting_for.get(uri, 0) + 1
        try:
            while not lock.acquire(timeout=0.02):
                if should_stop is not None and should_stop():
                    raise Superseded()
        finally:
            with self.lock:
                self.waiting_for[uri] -= 1
        try:
            yield
        finally:
            lock.release()

    def lint_executor(self, text: Optional[str]) -> Any:
        """The thread that lints and primes a document of this text up to the size limit: the big
        lint thread over BIG_LINT_CHARS, else the lint thread."""
        return self.big_lints if text is not None and len(text) > BIG_LINT_CHARS else self.executor

    # -- big documents: analysed in the far process (vjplint.server.far) ------------------------
    def far_document(self, uri: str) -> bool:
        """Whether `uri` is over `lintOnChangeMaxSize`: analysed in the far process, never here."""
        return uri in self.save_only

    def analyse_far(self, uri: str, text: str, path: Optional[Path], should_stop: Optional[Any]) -> Analysis:
        """`analyse` for a big document: in the far process, this thread waiting on a pipe (the
        interpreter stays free for the event loop and the other documents); `should_stop()`
        abandons it at once."""
        config, facts = self.config_for(path, INDEX_WAIT_S)
        filename = _display_name(uri, path, config, self.workspace_root())
        where = str(path) if path is not None else None
        if path is not None and _excluded(path, config):
            analysis = Analysis(text, [], config, filename, where, facts=facts)
        else:
            diagnostics, errors, reasons, plans = self.far.ask(
                ("lint", filename, text, config, where, facts, self.portable_others(path)),
                should_stop or (lambda: False))
            analysis = Analysis(text, diagnostics, config, filename, where, facts=facts, errors=errors,
                                residual_plans=plans, far=True)
            if reasons is not None:
                analysis.named_checked, analysis.named_elsewhere = True, reasons
            for error in errors:
                log.error("%s", error)
        return self._store(uri, path, analysis)

    def _store(self, uri: str, path: Optional[Path], analysis: Analysis) -> Analysis:
        """Keep `analysis` as `uri`'s; then, if the folder's index changed while it was linted (a
        save rebuilt the wrappers, the facts were installed), lint it again: `refresh_folder` ran
        while this lint had no analysis stored and left it to this lint, which had read the old
        settings (a CI run waited 300 s for the re-lint after a save)."""
        with self.lock:
            self.analyses[uri] = analysis
        if path is not None and self.config_for(path) != (analysis.config, analysis.facts):
            folder = self.folder_of(path)
            if folder is not None:
                self.call_soon(self.refresh_folder, folder)
        return analysis

    def portable_others(self, path: Optional[Path]) -> Optional[list]:
        """The other modules of `path`'s folder as the far process reads them (vjplint.server.far.Reader):
        None while the folder has no index."""
        folder = self.folder_of(path) if path is not None else None
        facts = self.facts.get(folder) if folder is not None else None
        if facts is None:
            return None
        out = []
        for key, entry in list(facts.files.items()):
            buffer = facts.buffer(key)
            out.append((Path(key), entry.display, Reader(key, buffer.encode("utf-8", "surrogatepass")
                                                         if buffer is not None else None)))
        return out

    def last_analysis(self, uri: str, text: str) -> Tuple[Optional[Analysis], bool]:
        """A big document's last analysis (None before the first), and whether it is stale (the
        buffer changed since: edits are analysed when saved)."""
        with self.lock:
            analysis = self.analyses.get(uri)
        return analysis, analysis is not None and analysis.text != text

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
            self.lint_executor(text).submit(self.prime, uri, linter, text)

    def prime(self, uri: str, linter: IncrementalLinter, text: str) -> None:
        """In the lint thread: the families of a document linted whole (its first lint), so that
        an edit re-lints only its own; their findings are read off that lint (a tenth of the
        lint's time), or, where they cannot be, linted. Any other work waiting for the lint
        thread goes first: it stops such linting between two families (after one at least: two
        documents' primings waiting for each other would go on forever), and this goes on after it."""
        analysis = self.analyses.get(uri)
        if self.linters.get(uri) is not linter or not linter.unprimed or analysis is None or analysis.text != text:
            return  # closed, edited, or its settings changed
        waiting = getattr(self.lint_executor(text), "_work_queue", None)
        families = [0]

        def stop() -> bool:  # asked before each family to lint
            families[0] += 1
            return uri in self.queued or (families[0] > 1 and (
                (waiting is not None and not waiting.empty()) or self.waiting_for.get(uri, 0) > 0))
        try:
            with self.document_lock(uri), collector_paused():
                linter.prime(text, stop)
        except Superseded:
            if uri not in self.queued:  # the document's own lint would do it anyway
                self.lint_executor(text).submit(self.prime, uri, linter, text)
        except Exception:
            log.exception("linting %s failed", uri)

    def attach_fixes(self, analysis: Analysis, uri: str, wanted: Sequence[Diagnostic],
                     should_stop: Optional[Any] = None) -> None:
        """Fill the fix edits (libcst) of the `wanted` diagnostics, only when an action needs them,
        each computed on its family of statements alone (vjplint.server.fixes) when that is safe
        (a big document's: in the far process)."""
        todo = [d for d in wanted if d.fix is not None and not d.fix.resolved and d.fix.plan is not None]
        if not todo:
            return
        if analysis.far:
            try:
                found = self.far.ask(("fix", analysis.filename, analysis.text, analysis.config, analysis.facts, todo),
                                     should_stop or (lambda: False))
            except FarFailed as exc:
                log.error("cannot compute fixes for %s: %s", analysis.filename, exc)
                return
            for d, edits in zip(todo, found):
                if edits and d.fix is not None:
                    d.fix = d.fix.with_edits(tuple(edits))
            return

        try:
            with self.document_lock(uri, should_stop):
                linter = self.linters.get(uri)
                attach_family_fixes(todo, analysis.text, analysis.filename, analysis.config,
                                    linter if linter is not None and linter.current(analysis.text) else None,
                                    analysis.facts)
        except Superseded:
            raise
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
            with self.facts_lock:  # updated in the lint thread (vjplint.server.indexing)
                return named_in_others(Path(analysis.path), analysis.text, analysis.config,
                                       analysis.residual_plans, facts.modules(), analysis.facts)
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
        if analysis.far:  # a big document: checked at its lint only (the far process parses it)
            return analysis
        if self.named_elsewhere_changed(analysis):
            with self.lock:
                if self.analyses.get(uri) is analysis:
                    self.analyses.pop(uri, None)
            analysis = self.analyse(uri, text, should_stop)
            if uri in self.versions:
                self.call_soon(self.schedule, uri, 0)
        return analysis

    def fix_all_text(self, analysis: Analysis, unsafe: bool, should_stop: Optional[Any] = None) -> Optional[str]:
        """`vjplint --fix` on the buffer (cached per text: clients ask on every cursor move), without
        the fixes made unsafe because another module names their rules, even with `unsafeFixes`:
        fix-all (often run on save) never breaks another module; their quick fix applies them.
        A big document's runs in the far process."""
        if unsafe not in analysis.fixed_text and analysis.far:
            try:
                analysis.fixed_text[unsafe] = self.far.ask(
                    ("fix_all", analysis.filename, analysis.text, analysis.config, analysis.path, analysis.facts,
                     unsafe, tuple(analysis.named_elsewhere)), should_stop or (lambda: False))
            except FarFailed as exc:
                # a fix-all cancelled, or cut short by the server's end, failed for no fault of its own
                quiet = self.far.closed or (should_stop is not None and should_stop())
                (log.debug if quiet else log.error)("fix-all failed for %s: %s", analysis.filename, exc)
                return None
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


def _warm_up(server: Any = None) -> None:
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
        import vjplint.fixes.residual_text  # noqa: F401
    except Exception:
        log.info("no fix machinery: quick fixes will have no edits")
