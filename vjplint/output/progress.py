"""A progress line on a terminal: `vjplint: 12/340 files`, rewritten in place on stderr.

Shown only when the stream is a terminal (never in pipes, files or CI logs) and only once a run
has lasted `delay` seconds (2 by default: a short run never shows it); cleared when the count is
complete, so the report that follows starts on a clean line. Used by `check`, `--fix`,
`--add-noqa` (files linted, files fixed) and `verify` (files verified); any command may use it.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

DELAY_S = 2.0


def on_terminal(stream: Optional[TextIO] = None, quiet: bool = False) -> bool:
    """Whether a progress line belongs on `stream` (stderr by default)."""
    stream = stream if stream is not None else sys.stderr
    try:
        return not quiet and stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a real stream
        return False


class ProgressLine:
    """Call it with (done, total) as work completes; `detail` names what was just done."""

    def __init__(self, noun: str = "files", *, prefix: str = "vjplint", stream: Optional[TextIO] = None,
                 delay: float = DELAY_S, clock: Optional[Callable[[], float]] = None) -> None:
        # time.monotonic looked up at each call, not bound once at import: a test that patches
        # it sees its clock whichever test imported this module first
        self.clock = clock if clock is not None else (lambda: time.monotonic())
        self.noun, self.prefix, self.delay = noun, prefix, delay
        self.stream = stream
        self.start = self.clock()
        self.shown = self.ended = False
        # (threading is imported here: a run whose stderr is no terminal makes no progress line
        # and does without the module, 1.7 ms of a pre-commit check of one file)
        import threading

        self._timer: Optional["threading.Timer"] = None
        self._lock = threading.RLock()

    def begin(self, total: int) -> None:
        """Show `0/total` once the delay has passed with nothing done yet (a slow first item:
        a verify harness importing JAX), from a timer thread; `__call__` takes over after it."""
        def first() -> None:
            with self._lock:
                if not self.shown and not self.ended:
                    self._write(f"{self.prefix}: 0/{total} {self.noun}", False)

        import threading

        self._timer = threading.Timer(max(self.delay - (self.clock() - self.start), 0.0), first)
        self._timer.daemon = True
        self._timer.start()

    def _write(self, line: str, finished: bool) -> None:
        self.shown = True
        stream = self.stream if self.stream is not None else sys.stderr
        stream.write(f"\r\033[K{line}")
        if finished:
            stream.write("\r\033[K")
        stream.flush()

    def __call__(self, done: int, total: int, detail: str = "") -> None:
        with self._lock:
            self._show(done, total, detail)

    def _show(self, done: int, total: int, detail: str) -> None:
        finished = done >= total
        if finished:
            self.ended = True
            if self._timer is not None:
                self._timer.cancel()
        if not finished and self.clock() - self.start < self.delay:
            return
        if finished and not self.shown:
            return  # done before the delay: nothing was shown, nothing to clear
        line = f"{self.prefix}: {done}/{total} {self.noun}" + (f" ({detail})" if detail and not finished else "")
        self._write(line, finished)


def progress_line(noun: str = "files", *, prefix: str = "vjplint", quiet: bool = False,
                  delay: float = DELAY_S) -> Optional[ProgressLine]:
    """A ProgressLine on stderr when stderr is a terminal (and not `quiet`), else None."""
    return ProgressLine(noun, prefix=prefix, delay=delay) if on_terminal(sys.stderr, quiet) else None
