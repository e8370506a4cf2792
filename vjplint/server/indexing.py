"""The Language Server's per-folder project index: wrappers (vjplint.project.index) and cross-module
facts (vjplint.server.project_index), built off the event loop and the lint thread.

A folder's index is built in a thread of its own when a document of the folder is first linted;
that lint waits for its wrappers at most `INDEX_WAIT_S` (a small project is indexed by then),
else goes on without; the facts are built once it is done (not beside it: threads share the
interpreter), and the documents whose settings the index changes are linted again when it is ready.
Then each edit, save or file event updates the facts of one file (in the lint thread, after the
document's own diagnostics, once typing pauses for `FACTS_DELAY_MS`), and only the open documents
whose facts changed are linted again. Saving a file rebuilds the wrappers (in the background);
creating or deleting one rebuilds the folder's index, the old one serving until then.
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.project.index import ProjectIndex, _module_name, _package, build_index
from vjplint.server.project_index import FolderFacts, Stopped

log = logging.getLogger("vjplint.server")
MAX_INDEXED_FILES = 20_000  # a workspace folder's files read for its index, at most
INDEX_WAIT_S = 0.5  # the first lint of a folder waits this long for its index, at most
FACTS_DELAY_MS = 150  # an edit's facts are updated once typing pauses this long
FACTS_AFTER_S = 10.0  # a folder's facts are built after the first lint, or after this long at most


def uri_path(uri: str) -> Optional[Path]:
    """The file a `file:` URI names (None for other schemes)."""
    from pygls.uris import to_fs_path

    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return Path(path) if path else None


class Indexing:
    """Mixed into VjplintServer (which provides lock, project, executor, versions, analyses,
    workspace helpers, schedule and call_soon)."""

    def init_indexing(self) -> None:
        self.wrappers: Dict[str, Any] = {}  # folder -> its vjplint.project.index.ProjectIndex (ready)
        self.facts: Dict[str, Any] = {}  # folder -> its FolderFacts (ready; used in the lint thread only)
        self.indexing: Dict[str, threading.Event] = {}  # folder -> set when its wrappers are ready
        self.index_generation = 0  # bumped when the settings change: older builds are dropped
        self.index_builds: Dict[Tuple[str, str], int] = {}  # (folder, "wrappers"/"facts") -> the newest build
        self.fact_configs: Dict[str, Tuple[RunFacts, Any, RunFacts]] = {}  # path -> (the index's, rows, with rows)
        self.facts_timers: Dict[str, Any] = {}  # uri -> the pending facts update
        self.facts_cost_ms: Dict[str, float] = {}  # uri -> how long its last update took
        self.first_analysis = threading.Event()  # set once a document is linted: the facts wait for it
        self.facts_lock = threading.RLock()  # FolderFacts: updated in the lint thread, read by requests

    def reset_index(self) -> None:
        self.index_generation += 1
        self.wrappers.clear()
        self.facts.clear()
        self.indexing.clear()
        self.index_builds.clear()
        self.fact_configs.clear()

    # -- reading -----------------------------------------------------------------------------
    def indexed_config(self, config: Config, folder: str, path: Path, wait: float) -> Tuple[Config, RunFacts]:
        """`config`, and what the run derives about `path` (vjplint.model.run_facts): `folder`'s
        wrappers and `path`'s cross-module facts, as far as known."""
        index = self.wrappers.get(folder)
        if index is None:
            event = self.start_index(folder)
            if wait > 0 and threading.get_ident() != self.loop_thread and event.wait(wait):  # type: ignore[attr-defined]
                index = self.wrappers.get(folder)
        derived = index.facts_for(config, path) if index is not None else NO_FACTS
        facts = self.facts.get(folder)
        rows = facts.facts_of(str(path)) if facts is not None else ()
        if not rows:
            return config, derived
        key = os.path.abspath(path)
        cached = self.fact_configs.get(key)
        if cached is not None and cached[0] is derived and cached[1] is rows:
            return config, cached[2]
        from dataclasses import replace

        found = replace(derived, rows=tuple(rows))
        self.fact_configs[key] = (derived, rows, found)
        return config, found

    def open_paths(self) -> Dict[str, str]:
        """Open documents and notebooks: absolute path -> uri."""
        out = {}
        for uri in [*self.versions, *self.notebook_versions]:  # type: ignore[attr-defined]
            path = uri_path(uri)
            if path is not None:
                out[os.path.abspath(path)] = uri
        return out

    def buffer_of(self, path: str) -> Optional[str]:
        uri = self.open_paths().get(os.path.abspath(path))
        return self.buffer_text(uri) if uri is not None else None  # type: ignore[attr-defined]

    # -- building ----------------------------------------------------------------------------
    def start_index(self, folder: str, facts: bool = True, again: bool = False) -> threading.Event:
        """Build `folder`'s index in the background (`again`: even if it has one, or one is being
        built; the newest build wins, the old index serving until then)."""
        with self.lock:  # type: ignore[attr-defined]  # called from the event loop and the lint thread
            event = self.indexing.get(folder)
            if event is not None and not again:
                return event
            event = threading.Event()
            if folder not in self.wrappers:
                self.indexing[folder] = event
            generation = self.index_generation
            builds = [(folder, "wrappers")] + ([(folder, "facts")] if facts else [])
            seq = {key: self.index_builds.get(key, 0) + 1 for key in builds}
            self.index_builds.update(seq)
        threading.Thread(target=self._build, args=(folder, generation, seq, event, facts), daemon=True,
                         name="vjplint-index").start()
        return event

    def _build(self, folder: str, generation: int, seq: Dict[Tuple[str, str], int], event: threading.Event,
               with_facts: bool) -> None:
        import time

        began = time.perf_counter()

        def stale(part: str = "wrappers") -> bool:  # the settings changed, or a newer build started
            return self.index_generation != generation or self.index_builds.get((folder, part)) != seq[(folder, part)]
        python: List[Tuple[Path, str, str, str]] = []
        index: Any = None
        anchor: Optional[Config] = None
        try:
            with self.lock:  # type: ignore[attr-defined]
                project = self.project  # type: ignore[attr-defined]
                if project is None:
                    return
                files = [f for f, _ in project.files([folder], [])]
                anchor = project.settings_for_dir(folder)
            if len(files) > MAX_INDEXED_FILES:  # a home directory opened as a folder: no project to index
                log.info("%s: %d Python files, more than %d: not indexed", folder, len(files), MAX_INDEXED_FILES)
                files = []
            files = [f for f in files if not self.too_big_to_index(f)]
            index = build_index(files, anchor, use_cache=False, base=folder)
            python = _python_files(index, files, folder)
        except Exception:
            log.exception("indexing %s failed", folder)
            index = ProjectIndex()
        finally:
            if index is not None and not stale():
                with self.lock:  # type: ignore[attr-defined]
                    if not stale():
                        self.wrappers[folder] = index
            event.set()
        if index is None or self.index_generation != generation:
            return
        self.call_soon(self.refresh_folder, folder)  # type: ignore[attr-defined]
        if not with_facts:
            return

        # The facts take long on a large folder: not while the first document is linted (the
        # thread would share the interpreter with it), unless it takes very long.
        self.first_analysis.wait(FACTS_AFTER_S)
        try:
            facts = FolderFacts(python, self.buffer_of, (anchor, folder) if anchor is not None else None)
            facts.build(lambda: stale("facts"))
        except Stopped:
            return
        except Exception:
            log.exception("indexing %s failed", folder)
            return
        log.info("%s: project index built (%d modules, %.1f s)", folder, len(python), time.perf_counter() - began)
        self.executor.submit(self._install_facts, folder, facts, lambda: stale("facts"))  # type: ignore[attr-defined]

    def too_big_to_index(self, path: Any) -> bool:
        """A module over `lintOnChangeMaxSize` is not read for the index: this process would parse
        it while the editor waits (seconds for 10 MB), and its own lint is in the far process."""
        limit = self.settings.lint_on_change_max_size  # type: ignore[attr-defined]
        try:
            return limit > 0 and os.path.getsize(path) > limit
        except OSError:
            return False

    def _install_facts(self, folder: str, facts: Any, stale: Any) -> None:
        """In the lint thread: the buffers may have moved on since the build read them."""
        if stale():
            return
        try:
            with self.facts_lock:
                for path in self.open_paths():
                    facts.update(path)
        except Exception:
            log.exception("indexing %s failed", folder)
            return
        self.facts[folder] = facts
        self.call_soon(self.refresh_folder, folder)  # type: ignore[attr-defined]
        self.recheck_named_elsewhere(folder)

    # -- updating ------------------------------------------------------------------------------
    def facts_changed(self, uri: str, delay_ms: Optional[float] = None) -> None:
        """On the event loop: `uri`'s text changed (buffer or disk); update its facts once edits
        pause for FACTS_DELAY_MS, or thrice as long as its last update took (a module that calls
        targets is parsed and modelled: a keystroke arriving meanwhile would wait for it)."""
        import asyncio

        if delay_ms is None:
            delay_ms = max(FACTS_DELAY_MS, 3 * self.facts_cost_ms.get(uri, 0.0))
        handle = self.facts_timers.pop(uri, None)
        if handle is not None:
            handle.cancel()
        version = self.version_of(uri)  # type: ignore[attr-defined]
        submit = lambda: self.executor.submit(self.update_facts, uri, version)  # noqa: E731  # type: ignore[attr-defined]
        if delay_ms <= 0:
            submit()
        else:
            self.facts_timers[uri] = asyncio.get_running_loop().call_later(delay_ms / 1000, submit)

    def update_facts(self, uri: str, version: Optional[int]) -> None:
        """In the lint thread: one file's facts, then the open documents whose facts changed."""
        import time

        self.facts_timers.pop(uri, None)
        if self.version_of(uri) != version:  # type: ignore[attr-defined]
            return  # a newer text (its own update follows), or opened or closed meanwhile (likewise)
        if self.far_document(uri):  # type: ignore[attr-defined]
            return  # over the size limit: not indexed (`too_big_to_index`)
        if self.queued:  # type: ignore[attr-defined]  # documents wait for their lint: theirs first
            self.call_soon(self.facts_changed, uri)  # type: ignore[attr-defined]
            return
        path = uri_path(uri)
        folder = self.folder_of(path) if path is not None else None  # type: ignore[attr-defined]
        facts = self.facts.get(folder) if folder is not None else None
        if facts is None or path is None:
            return
        began = time.perf_counter()
        try:
            with self.facts_lock:  # read by requests' threads (named_elsewhere_of)
                changed = facts.update(str(path), self.buffer_text(uri))  # type: ignore[attr-defined]
        except Exception:
            log.exception("updating the index for %s failed", uri)
            return
        self.facts_cost_ms[uri] = (time.perf_counter() - began) * 1000
        if changed:
            log.info("facts changed for %s (after %s)", sorted(changed), uri)
            self.call_soon(self.refresh_folder, folder)  # type: ignore[attr-defined]
        self.recheck_named_elsewhere(folder)

    def recheck_named_elsewhere(self, folder: str) -> None:
        """In the lint thread: the open documents of `folder` whose residual fixes another module
        now names, or no longer names (vjplint.fixes.named_elsewhere), are linted again."""
        for uri, analysis in list(self.analyses.items()):  # type: ignore[attr-defined]
            if not analysis.residual_plans or analysis.path is None or \
                    self.folder_of(Path(analysis.path)) != folder:  # type: ignore[attr-defined]
                continue
            # a big document's check is its far process's, at its lint: redone when it had no index
            if (not analysis.named_checked) if analysis.far else self.named_elsewhere_changed(analysis):  # type: ignore[attr-defined]
                with self.lock:  # type: ignore[attr-defined]
                    if self.analyses.get(uri) is analysis:  # type: ignore[attr-defined]
                        self.analyses.pop(uri, None)  # type: ignore[attr-defined]
                self.call_soon(self.schedule, uri, 0)  # type: ignore[attr-defined]

    def files_changed(self, changes: Iterable[Tuple[str, int]]) -> None:
        """workspace/didChangeWatchedFiles for Python files: (uri, 1 created / 2 changed / 3 deleted)."""
        rebuild: Dict[str, bool] = {}  # folder -> whether its facts are rebuilt too
        for uri, kind in changes:
            path = uri_path(uri)
            folder = self.folder_of(path) if path is not None else None  # type: ignore[attr-defined]
            if folder is None or folder not in self.indexing:
                continue
            if kind == 2:
                if self.version_of(uri) is None:  # type: ignore[attr-defined]  # open: its buffer is what counts
                    self.facts_changed(uri, 0)
                rebuild.setdefault(folder, folder not in self.facts)  # its wrappers may have changed (and
                # the facts being built may have read the file before)
            else:
                rebuild[folder] = True  # a module appeared or went away: names and packages may change
        for folder, facts in rebuild.items():  # once per folder and notification (a checkout sends many)
            self.start_index(folder, facts=facts, again=True)

    def refresh_folder(self, folder: str) -> None:
        """On the event loop: lint again the open documents of `folder` whose settings (wrappers,
        facts) are no longer those of their last analysis, and only those."""
        stale: List[str] = []
        for uri in [*self.versions, *self.notebook_versions]:  # type: ignore[attr-defined]
            path = uri_path(uri)
            if path is None or self.folder_of(path) != folder:  # type: ignore[attr-defined]
                continue
            analysis = self.analyses.get(uri)  # type: ignore[attr-defined]
            if analysis is None:
                continue  # not linted yet: its lint reads the new settings
            if self.config_for(path) != (analysis.config, analysis.facts):  # type: ignore[attr-defined]
                with self.lock:  # type: ignore[attr-defined]
                    self.analyses.pop(uri, None)  # type: ignore[attr-defined]
                stale.append(uri)
        if not stale:
            return
        log.info("re-linting %s: the project index changed", ", ".join(stale))
        notebooks = [uri for uri in stale if uri in self.notebook_versions]  # type: ignore[attr-defined]
        for uri in notebooks:  # their cells are always pushed
            self.schedule(uri, 0)  # type: ignore[attr-defined]
        if self.pull:  # type: ignore[attr-defined]
            if len(notebooks) < len(stale):
                self.refresh_pulls()  # type: ignore[attr-defined]
            return
        for uri in stale:
            if uri not in notebooks:
                self.schedule(uri, 0)  # type: ignore[attr-defined]


def _python_files(index: Any, files: List[Path], folder: str) -> List[Tuple[Path, str, str, str]]:
    """(path, module, package, display) of the .py files and notebooks, as vjplint.project.index.build_index
    names them."""
    out = []
    for path in files:
        notebook = str(path).endswith(".ipynb")
        if not (notebook or str(path).endswith(".py")):
            continue
        absolute = os.path.abspath(path)
        directory = os.path.dirname(absolute)
        package = index.package_of.get(directory)
        if package is None:
            package = _package(directory, {})
        display = os.path.relpath(absolute, folder)
        # A notebook is a caller only, named by its path (as vjplint.project.index names it).
        module = display if notebook else index.renamed.get(absolute) or _module_name(package, path)
        out.append((Path(path), module, package, display))
    return out
