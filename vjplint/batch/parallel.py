"""Lint many files: the cache, the byte prefilter in the parent, and candidates over processes.

The parent stats and reads every file, answers what the cache knows, and skips what the byte
prefilter rules out (most files; no parse). Only the remaining candidates are linted, in worker
processes when there is enough work to pay for starting them, biggest first. Results do not depend
on the cache or on the number of processes: the same `lint_source` runs on the same bytes.
"""

from __future__ import annotations

import gc
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from vjplint.settings.config import Config
from vjplint.model.run_facts import NO_FACTS, RunFacts
from vjplint.lint.session import LintSession
from vjplint.batch.fastpath import short_name
from vjplint.lint.engine import LintResult, lint_source, may_contain_findings, prefilter_names
from vjplint.batch.outcomes import FileOutcome, display_path
from vjplint.syntax import notebook
from vjplint.syntax.names import PREFILTER_NAMES

if TYPE_CHECKING:
    from vjplint.batch.cache import ResultCache
    from vjplint.project.index import Read
    from vjplint.fixes.apply import FixResult
    from vjplint.batch.outcomes import FileOutcome

Progress = Optional[Callable[[int, int], None]]
# (index in `files`, display path, path, size, whether to hash, index of its settings). Workers
# read the file themselves: the parent never holds all candidates' bytes (memory stays flat
# however big the tree).
Task = Tuple[int, str, str, int, bool, int]
Done = Tuple[LintResult, str]  # the result and the SHA-256 of the bytes linted ("" if not asked)
# A file's settings and what the run derives about it (vjplint.model.run_facts), sent to the workers once.
Settings = Tuple[Config, RunFacts]

# With the default job count, processes start only for this much candidate source, and each
# worker should get at least PER_WORKER_BYTES: a worker costs about what linting 50 kB does.
MIN_PARALLEL_BYTES = 256_000
PER_WORKER_BYTES = 128_000
# From this many files on, the cache is asked (by size and mtime) before a file is read.
STAT_FIRST_MIN_FILES = 64
# How much text of files with findings the parent keeps for the formatters (more is read again).
KEEP_TEXT_CHARS = 32_000_000


def lint_many(items: Sequence[Union[Tuple[Path, Config, RunFacts], Tuple[Path, Config]]], anchor: Config, *,
              jobs: Optional[int] = None, use_cache: bool = True, progress: Progress = None,
              session: Optional[LintSession] = None, reads: Optional[Dict[str, "Read"]] = None) -> List["FileOutcome"]:
    """One outcome per (file, its settings[, what the run derives about it]), in the order given.
    `anchor`'s settings say where the cache lives. `jobs`: None or < 1 picks a count from the
    work and the CPUs; 1 lints in this process; N > 1 uses up to N processes. `session`: the
    run's lint session (vjplint.lint.session): this process lints in it, each worker in a copy
    of its switches. `reads`: what the run's project index read of its .py files
    (vjplint.project.index.Read, by `str(path)`): a file it found without a prefilter name is not
    read again (`_known`); a candidate is read by whoever lints it."""
    runs = [(item[0], item[1], item[2] if len(item) > 2 else NO_FACTS) for item in items]  # type: ignore[misc]
    configs: List[Settings] = []  # the distinct (settings, facts) of this run, in order of first use
    # The pair's place in `configs`, by value (both are frozen; the workspace shares one settings
    # object per pyproject.toml and the index one facts object per package or module).
    config_index: Dict[Settings, int] = {}
    names_of: List[Tuple[bytes, ...]] = []
    fingerprints: List[str] = []
    files = [path for path, _, _ in runs]
    # Big runs ask the cache first: a stat instead of a read for every unchanged file. Small runs
    # (pre-commit's few files) read first and open the cache only for a candidate, so that a run
    # over files without custom derivatives costs no more than reading them.
    stat_first = use_cache and len(files) >= STAT_FIRST_MIN_FILES
    cache = _open_cache(anchor) if stat_first else None
    outcomes: List[Optional[FileOutcome]] = [None] * len(files)
    stats: List[Optional[os.stat_result]] = [None] * len(files)
    digests: List[str] = [""] * len(files)
    tasks: List[Task] = []
    total, done = len(files), 0
    for i, (path, config, facts) in enumerate(runs):
        c = config_index.get((config, facts))
        if c is None:
            c = config_index[(config, facts)] = len(configs)
            configs.append((config, facts))
            names_of.append(prefilter_names(config, facts))
            fingerprints.append(short_name(config.fingerprint() + facts.fingerprint()))
        names, fingerprint = names_of[c], fingerprints[c]
        display = display_path(path)
        if stat_first:
            st = stats[i] = _stat(path)
            entry = cache.fresh_by_stat(display, st, fingerprint) if st is not None else None  # type: ignore
            if entry is not None:  # the warm path: most files, nothing found, nothing to decode
                outcomes[i] = (FileOutcome(path, display, LintResult(analysed=entry[3]), config, facts) if not entry[4]
                               else _from_cache(cache, entry, path, display, config, facts))  # type: ignore[arg-type]
        if outcomes[i] is None:
            known = _known(reads, path, names, use_cache, stats, i)
            data: Optional[bytes] = None
            try:
                if known is None:
                    data = path.read_bytes()
            except OSError as exc:
                outcomes[i] = FileOutcome(path, display, LintResult(errors=[f"{display}: cannot read file: "
                                                                            f"{exc.strerror or exc}"]), config, facts)
            else:
                size, candidate = (known[0], known[3]) if data is None else (len(data), may_contain_findings(data, names))
                if use_cache and (stat_first or candidate):
                    if cache is None:
                        cache = _open_cache(anchor)
                    if stats[i] is None:
                        stats[i] = _stat(path)
                    if stats[i] is not None:
                        from vjplint.batch.cache import content_hash

                        digests[i] = content_hash(data) if data is not None else known[2]  # type: ignore[index]
                        entry = cache.fresh_by_hash(display, digests[i], stats[i], fingerprint)  # type: ignore
                        outcomes[i] = _from_cache(cache, entry, path, display, config, facts) if entry is not None else None
                if outcomes[i] is None:
                    if candidate:
                        tasks.append((i, display, str(path), size, cache is not None, c))
                        continue
                    outcomes[i] = FileOutcome(path, display, LintResult(), config, facts)
                    _remember(cache, display, stats[i], digests[i], outcomes[i].result, fingerprint)  # type: ignore
        done += 1
        _tick(progress, done, total)

    workers = worker_count(jobs, tasks)
    displays = {t[0]: t[1] for t in tasks}
    if session is None:
        session = LintSession()
    results = _run_parallel(tasks, configs, workers, session=session) if workers > 1 else \
        ((t[0], _lint(t, configs, session, freeze=k == 0)) for k, t in enumerate(tasks))
    kept = 0
    for i, (result, digest) in results:
        if result.decoded is not None:  # texts of files with findings, for the formatters: beyond a
            kept += len(result.decoded.text)  # budget they are read again when printed (LazySources)
            if kept > KEEP_TEXT_CHARS:
                result.decoded = None
        _, config, facts = runs[i]
        outcomes[i] = FileOutcome(files[i], displays[i], result, config, facts)
        # The digest of the bytes the worker linted, with the stat taken before they were read:
        # had the file changed in between, its mtime (or the racy check) sends the next run to the hash.
        _remember(cache, displays[i], stats[i], digest, result, fingerprints[config_index[(config, facts)]])
        done += 1
        _tick(progress, done, total)
    if cache is not None:
        cache.save({o.display for o in outcomes if o is not None})
    return outcomes  # type: ignore[return-value]


def _known(reads: Optional[Dict[str, "Read"]], path: Path, names: Tuple[bytes, ...], use_cache: bool,
           stats: List[Optional[os.stat_result]], i: int) -> Optional["Read"]:
    """What the run's index read of `path` (vjplint.project.index.Read), when it stands for reading
    the file now: its prefilter was of the same names (no aliases), and for the cache, its digest
    is of the bytes the file holds at this stat (size and mtime those the index stat'ed before
    its read; the stat is kept in `stats[i]`, as the read's would be)."""
    known = reads.get(str(path)) if reads else None
    if known is None or names != PREFILTER_NAMES:
        return None
    if not use_cache:
        return known
    if stats[i] is None:
        stats[i] = _stat(path)
    st = stats[i]
    if st is None or not known[2] or known[1] != st.st_mtime_ns or known[0] != st.st_size:
        return None
    return known


def _stat(path: Path) -> Optional[os.stat_result]:
    try:
        return os.stat(path)
    except OSError:
        return None


def worker_count(jobs: Optional[int], tasks: Sequence[Task]) -> int:
    if len(tasks) < 2:
        return 1
    if jobs is not None and jobs >= 1:
        return min(jobs, len(tasks))
    work = sum(t[3] for t in tasks)
    if work < MIN_PARALLEL_BYTES:
        return 1
    return max(1, min(available_cpus(), len(tasks), work // PER_WORKER_BYTES))


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# -- linting one file ---------------------------------------------------------------------
_FROZEN: List[bool] = []  # whether this process froze what its first lint left (`_lint`)
FREEZE_MAX_BYTES = 1 << 20  # a bigger first file's leftovers are left to the collector


def _lint(task: Task, configs: Sequence[Settings], session: LintSession, freeze: bool = False) -> Done:
    """`lint_source` with the cyclic GC paused: a big `ast` tree is millions of young objects
    that the collector would otherwise scan again and again (about a third of parse time).
    `freeze`: the first lint of a run without workers, which imports the rules and the facts
    it needs: what lives then is moved out of the collector's sight (`gc.freeze`, as a run with
    workers freezes the parent's objects before forking) instead of being scanned by the
    collection its resumption sets off: 3-4 ms of a one-file check's 150 (docs/performance.md).
    Once per process, and for a file of at most FREEZE_MAX_BYTES: the first file's own cyclic
    garbage stays, one small file's worth for the process's life."""
    _, display, path, size, want_digest, c = task
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return LintResult(errors=[f"{display}: cannot read file: {exc.strerror or exc}"]), ""
    digest = ""
    if want_digest:
        from vjplint.batch.cache import content_hash

        digest = content_hash(data)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        # The parent's prefilter passed these bytes (unless the file changed since: its size tells)
        config, facts = configs[c]
        result = (lint_source(display, data, config, path=path, prefiltered=len(data) == size, facts=facts,
                              session=session)
                  if not display.endswith(".ipynb")
                  else lint_notebook(display, data, config, path, facts, session))
    except Exception as exc:  # the engine never raises by design; this is the last guard
        result = LintResult(errors=[f"{display}: internal error: {type(exc).__name__}: {exc}"])
    finally:
        if was_enabled:
            if freeze and not _FROZEN and size <= FREEZE_MAX_BYTES:  # once per process (`--watch` lints again)
                _FROZEN.append(True)
                gc.freeze()
            gc.enable()
    if not result.diagnostics:
        result.decoded = None  # nothing will quote this file: don't carry its text around
    return result, digest


def lint_notebook(display: str, data: bytes, config: Config, path: Optional[str],
                  facts: RunFacts = NO_FACTS, session: Optional[LintSession] = None) -> LintResult:
    """A notebook's code cells as one module; its diagnostics' rows mapped to (cell, row)."""
    try:
        source = notebook.read(data)
    except notebook.NotebookError as exc:
        return LintResult(errors=[f"{display}: {exc}"])
    result = lint_source(display, source.text, config, path=path, facts=facts, session=session)
    result.diagnostics = notebook.to_cells(result.diagnostics, notebook.CellMap.of(notebook.split_lines(source.text)))
    return result


# A worker process's settings and lint session, set once by its initializer (each worker is a
# process of its own: this is its state, never the parent's).
_WORKER_CONFIGS: Sequence[Settings] = ()
_WORKER_SESSION = LintSession()


def _init_worker(configs: Sequence[Settings], session: Optional[LintSession] = None) -> None:
    global _WORKER_CONFIGS, _WORKER_SESSION
    _WORKER_CONFIGS = configs
    _WORKER_SESSION = session if session is not None else LintSession()
    # Ctrl-C reaches the whole process group: a worker just ends (no KeyboardInterrupt traceback);
    # the parent reports the interruption and ends the rest (see _run_parallel).
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


# Files per chunk: enough to amortise a round trip to the worker, few enough that the biggest
# files (first) spread over the workers and the last chunks balance the end of the run.
MAX_CHUNK = 32


def _chunks(ordered: Sequence[Task], workers: int) -> List[List[Task]]:
    size = max(1, min(MAX_CHUNK, len(ordered) // (workers * 8)))
    return [list(ordered[i:i + size]) for i in range(0, len(ordered), size)]


def _work_chunk(tasks: Sequence[Task]) -> List[Tuple[int, Done]]:
    return [(task[0], _lint(task, _WORKER_CONFIGS, _WORKER_SESSION)) for task in tasks]


def _work(task: Task) -> Tuple[int, Done]:
    return task[0], _lint(task, _WORKER_CONFIGS, _WORKER_SESSION)


# -- fixing many files ------------------------------------------------------------------------
# (index, display path, path, size, unsafe, index of its settings, the text to fix, the derivatives
# not to fix: their rules are named by another file of the run): the parent
# sends the text, which may be a cross-module pass's output rather than what is on disk.
FixTask = Tuple[int, str, str, int, bool, int, str, Tuple[str, ...]]
# Fixing a file costs about ten times linting it (libcst, passes to a fixed point): processes pay
# for themselves on a tenth of the bytes linting needs.
FIX_COST = 10


def fix_many(tasks: List[FixTask], configs: Sequence[Settings], jobs: Optional[int],
             progress: Progress = None) -> Dict[int, "FixResult"]:
    """`fix_text` of each task, in worker processes when there is enough work: pure, text in and
    text out (the caller writes). The results do not depend on the number of processes.
    `progress(done, total)` after each file, as `lint_many`'s."""
    weighted = [(t[0], t[1], t[2], t[3] * FIX_COST, t[4], t[5]) for t in tasks]
    workers = worker_count(jobs, weighted)  # type: ignore[arg-type]
    results: Dict[int, "FixResult"] = {}
    if workers <= 1:
        for t in tasks:
            results[t[0]] = _fix(t, configs)
            _tick(progress, len(results), len(tasks))
        return results
    from vjplint.fixes.apply import FixResult  # noqa: F401  (imported before forking, with the writer)
    import vjplint.fixes.residual_text  # noqa: F401

    for number, result in _run_parallel(tasks, configs, workers, _fix_chunk, _fix_alone):  # type: ignore[arg-type]
        results[number] = result
        _tick(progress, len(results), len(tasks))
    return results


def _fix(task: FixTask, configs: Sequence[Settings]) -> "FixResult":
    from vjplint.fixes.apply import FixResult, fix_text

    _, display, path, _, unsafe, c, text, exclude = task
    try:
        config, facts = configs[c]
        return fix_text(display, text, config, unsafe, exclude=exclude, path=path, facts=facts)
    except Exception as exc:  # the fix loop never raises by design; this is the last guard
        return FixResult(text, errors=[f"{display}: internal error while fixing: {type(exc).__name__}: {exc}"])


def _fix_chunk(tasks: Sequence[FixTask]) -> List[Tuple[int, "FixResult"]]:
    return [(task[0], _fix(task, _WORKER_CONFIGS)) for task in tasks]


def _fix_alone(task: FixTask) -> Tuple[int, "FixResult"]:
    return task[0], _fix(task, _WORKER_CONFIGS)


def _fix_died(task: FixTask) -> "FixResult":
    from vjplint.fixes.apply import FixResult

    return FixResult(task[6], errors=[f"{task[1]}: internal error: the worker process died while fixing this file"])


def _run_parallel(tasks: List[Task], configs: Sequence[Settings], workers: int, work_chunk=None, work_one=None,
                  session: Optional[LintSession] = None):
    """Yield (index, result) as workers finish, biggest files first (they bound the wall time).
    Tasks go to the workers in chunks, and finished chunks come back through one queue: waiting
    on every pending future at each step (concurrent.futures.wait) is quadratic in their number."""
    _preload()
    # The workers inherit every object of this process: frozen, the collector in a worker never
    # walks them (a walk writes to each object's header, copying its page into the worker).
    gc.freeze()
    try:
        yield from _pool_results(tasks, configs, workers, work_chunk, work_one,
                                 session.for_worker() if session is not None else None)
    finally:
        gc.unfreeze()


def _pool_results(tasks: List[Task], configs: Sequence[Settings], workers: int, work_chunk, work_one,
                  session: Optional[LintSession] = None):
    import queue
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    ordered = sorted(tasks, key=lambda t: t[3], reverse=True)
    unfinished = {t[0]: t for t in ordered}
    finished: "queue.SimpleQueue" = queue.SimpleQueue()
    with sigint_as_flag() as interrupted:
        pool = ProcessPoolExecutor(workers, mp_context=_context(), initializer=_init_worker,
                                   initargs=(configs, session))
        try:
            submitted, broken = 0, False
            for chunk in _chunks(ordered, workers):
                try:
                    future = pool.submit(work_chunk or _work_chunk, chunk)
                except BrokenProcessPool:  # a worker died already (Ctrl-C: see below)
                    broken = True
                    break
                future.add_done_callback(finished.put)
                submitted += 1
            while submitted and not broken:
                try:
                    future = finished.get(timeout=0.2)
                except queue.Empty:
                    if interrupted:
                        raise KeyboardInterrupt
                    continue
                if interrupted:
                    raise KeyboardInterrupt
                submitted -= 1
                try:
                    results = future.result()
                except BrokenProcessPool:
                    broken = True
                    break
                for i, result in results:
                    del unfinished[i]
                    yield i, result
        except BaseException:  # Ctrl-C, or the caller stopped early: never wait on the workers
            manager = getattr(pool, "_executor_manager_thread", None)
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            # A moment for the pool's manager thread to see its workers gone and close its wakeup
            # pipe: otherwise concurrent.futures' exit hook can write to the pipe while the thread
            # closes it (CPython 3.11), and "Exception ignored ... Bad file descriptor" follows
            # "vjplint: interrupted" on stderr. Bounded, so a stuck thread never holds the exit.
            if manager is not None:
                manager.join(timeout=2.0)
            raise
        pool.shutdown(wait=True, cancel_futures=True)
        if interrupted:
            raise KeyboardInterrupt
    # A worker died (a crash in the parser, the OOM killer): lint what is left one file per
    # process, so that only the file that kills its process is lost, with an error that names it.
    for task in unfinished.values():
        yield task[0], _isolated(task, configs, work_one, session)


@contextmanager
def sigint_as_flag() -> Iterator[List[bool]]:
    """While the pool runs, Ctrl-C only sets a flag the loop checks: a KeyboardInterrupt raised
    inside concurrent.futures can leave one of its locks held, and the interpreter then hangs at exit."""
    import signal
    import threading

    flag: List[bool] = []
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield flag
        return
    signal.signal(signal.SIGINT, lambda *_: flag.append(True))
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _isolated(task: Task, configs: Sequence[Settings], work_one=None, session: Optional[LintSession] = None):
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(1, mp_context=_context(), initializer=_init_worker, initargs=(configs, session)) as pool:
        try:
            return pool.submit(work_one or _work, task).result()[1]
        except BrokenProcessPool:
            if work_one is _fix_alone:
                return _fix_died(task)  # type: ignore[arg-type]
            return LintResult(errors=[f"{task[1]}: internal error: the worker process died while linting this file"]), ""


def _context():
    import multiprocessing
    import threading

    # fork shares the imported engine with the workers for free, but is only safe while this
    # process has one thread (an embedding program may have more); elsewhere the platform default.
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn" if sys.platform.startswith("linux") else None)


def _preload() -> None:
    """Import the analysis modules before forking, once, instead of once per worker."""
    import vjplint.facts.collect  # noqa: F401
    import vjplint.model.expected_errors  # noqa: F401
    import vjplint.syntax.region_parse  # noqa: F401
    from vjplint.rules.registry import all_rules

    all_rules()


# -- the cache ----------------------------------------------------------------------------
def _open_cache(config: Config) -> Optional["ResultCache"]:
    from vjplint.batch.cache import ResultCache

    return ResultCache(config)


def _from_cache(cache: "ResultCache", entry: list, path: Path, display: str,
                config: Config, facts: RunFacts = NO_FACTS) -> Optional["FileOutcome"]:
    try:
        analysed, diagnostics = cache.result_of(entry)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        return None  # an entry this version cannot read, or a damaged one: lint again (and store anew)
    # No text: the formatters that quote lines read the file when they get to it (runner.LazySources).
    return FileOutcome(path, display, LintResult(diagnostics=diagnostics, analysed=analysed), config, facts)


def _remember(cache: Optional["ResultCache"], display: str, st: Optional[os.stat_result], digest: str,
              result: LintResult, fingerprint: str) -> None:
    if cache is not None and st is not None and digest and not result.errors:
        cache.store(display, st, digest, result.analysed, result.diagnostics, fingerprint)


def _tick(progress: Progress, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)
