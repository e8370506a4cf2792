"""A big document's analysis in a process of its own, so that it never stalls the server.

A document over `lintOnChangeMaxSize` is linted when opened and saved (vjplint.server.state):
its lint is whole and, at 10 MB, takes tens of seconds, most of it Python holding the
interpreter (parsing alone holds it for seconds at a time). A thread would not do: while it
ran, the event loop and every other document's requests would wait for the interpreter. So
the lint of such a document, and the fix edits its code actions need, run in a far process
(this module's `main`, started on first use, with the lint helper's bootstrap), and the server's
thread that asks only waits on a pipe.

- One request at a time, from whichever thread asks (the lock); a request waiting for the lock
  or for its answer gives up as soon as `should_stop()` is true (a newer text, a cancelled
  request): a running one is abandoned by killing the process (the next request starts another).
- Requests: `lint` (diagnostics, internal errors, and which residual fixes other modules name,
  as the server marks them: vjplint.fixes.named_elsewhere), `fix` (the edits of planned fixes,
  vjplint.server.fixes), `fix_all` (the text `vjplint --fix` makes of it).
- A process that dies or answers something else fails the request (FarFailed): the caller
  logs it; the document keeps its last analysis.
- `VJPLINT_FAR_WAIT_FOR=PATH` (tests): the far process starts each lint once PATH exists, so a
  test holds a big document's analysis as long as it needs, whatever the machine's speed.

The fix machinery (libcst) is imported in the far process only, when a fix is asked for.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence, Tuple

from vjplint.fixes.named_elsewhere import mark_unsafe, named_in_others, residual_plans, targets_in
from vjplint.lint.engine import lint_source
from vjplint.lint.incremental import Superseded
from vjplint.lint.session import LintSession
from vjplint.project.cross_values import module_bytes
from vjplint.server.framing import widen_pipe
from vjplint.server.lint_helper import _BOOTSTRAP, _HEADER, WARM_UP, _read, _read_length
from vjplint.settings.config import Config

log = logging.getLogger("vjplint.server")
POLL_S = 0.02  # how often a waiting request asks whether it is still wanted
PARENT_VARIABLE = "VJPLINT_FAR_PARENT"  # the server's pid, for the far process (`main`)
Others = List[Tuple[Path, str, "Reader"]]


class FarFailed(Exception):
    """The far process died, or could not answer this request."""


class Reader:
    """Another module's text, for vjplint.fixes.named_elsewhere in the far process: the editor's
    buffer when it was open (sent along), else the file, read there when asked."""

    def __init__(self, path: str, buffer: Optional[bytes]) -> None:
        self.path, self.buffer = path, buffer

    def __call__(self) -> bytes:
        if self.buffer is not None:
            return self.buffer
        try:
            return module_bytes(Path(self.path))
        except OSError:
            return b""


class FarAnalysis:
    """The server's side: one far process, one request at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: Optional[subprocess.Popen] = None
        self.requests = 0
        self.killed = 0  # requests abandoned (superseded, cancelled), the process killed with them
        self.closed = False

    def ask(self, request: Tuple[Any, ...], should_stop: Callable[[], bool] = lambda: False) -> Any:
        """Send `request`, return its answer; Superseded when `should_stop()` becomes true first."""
        while not self.lock.acquire(timeout=POLL_S):
            if should_stop():
                raise Superseded()
        try:
            if should_stop():
                raise Superseded()
            proc = self._process()
            reply: List[Any] = []
            done = threading.Event()

            def exchange() -> None:
                try:
                    send(proc.stdin, request)
                    reply.append(receive(proc.stdout))
                except Exception as exc:  # a dead process, a broken pipe, an answer that does not load
                    reply.append(FarFailed(f"{type(exc).__name__}: {exc}"))
                finally:
                    done.set()

            self.requests += 1
            threading.Thread(target=exchange, name="vjplint-far-io", daemon=True).start()
            while not done.wait(POLL_S):
                if should_stop():
                    self.killed += 1
                    self._kill()
                    done.wait()  # the pipe breaks at once
                    raise Superseded()
            answer = reply[0]
            if isinstance(answer, FarFailed):
                self._kill()
                raise answer
            if not (isinstance(answer, tuple) and len(answer) == 2):
                raise FarFailed(f"an answer that is not one: {type(answer).__name__}")
            ok, value = answer
            if not ok:
                raise FarFailed(str(value))
            return value
        finally:
            self.lock.release()

    def _process(self) -> subprocess.Popen:
        if self.closed:
            raise FarFailed("the server is ending")
        if self.proc is None or self.proc.poll() is not None:
            package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            bootstrap = _BOOTSTRAP.replace("vjplint.server.lint_helper", "vjplint.server.far")
            try:
                env = {**os.environ, PARENT_VARIABLE: str(os.getpid())}
                self.proc = subprocess.Popen([sys.executable, "-c", bootstrap, package_root], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, env=env)
            except OSError as exc:
                raise FarFailed(f"cannot start a process: {exc}") from exc
            widen_pipe(self.proc.stdin)  # a 10 MB text in 10 turns of the two processes, not 160
            widen_pipe(self.proc.stdout)  # (and a fix-all's answer)
        return self.proc

    def _kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                proc.kill()
                proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                pass

    def describe(self) -> str:
        state = "none" if self.proc is None or self.proc.poll() is not None else f"pid {self.proc.pid}"
        return f"far analysis: process {state}; requests {self.requests}, abandoned {self.killed}"

    def stop(self) -> None:
        self.closed = True
        self._kill()


# -- the pipe's messages ------------------------------------------------------------------------
BIG_TEXT = 1 << 16  # characters: a text this long travels beside the pickle, not in it


class _Text:
    """A big text on its way: pickled as a reference to its UTF-8 bytes, which are written to the
    pipe as they are (`send`), not copied into the pickle and then into the frame."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __reduce_ex__(self, protocol: Any) -> Tuple[Any, Tuple[Any, ...]]:
        return _text, (pickle.PickleBuffer(self.text.encode("utf-8", "surrogatepass")),)


def _text(data: Any) -> str:
    return str(data, "utf-8", "surrogatepass")


def _wrapped(value: Any) -> Any:
    if isinstance(value, str) and len(value) >= BIG_TEXT:
        return _Text(value)
    if type(value) is tuple:  # a request or an answer: (kind, *args), (ok, value)
        return tuple(_wrapped(item) for item in value)
    return value


def send(stream: Any, message: Any) -> None:
    """Write `message` (a tuple) as a length-prefixed pickle followed by each big text's bytes,
    length-prefixed too: 10 MB of text costs one encoding, no copy into a pickle or a frame."""
    buffers: List[Any] = []
    data = pickle.dumps(_wrapped(message), protocol=5, buffer_callback=buffers.append)
    stream.write(_HEADER.pack(len(data)) + data)
    for buffer in buffers:
        with buffer.raw() as view:
            stream.write(_HEADER.pack(view.nbytes))
            stream.write(view)
    stream.flush()


def receive(stream: Any) -> Any:
    """What `send` wrote: the pickle, then as many texts as it refers to, read as it meets them."""
    data = _read(stream, _read_length(stream))
    return pickle.loads(data, buffers=iter(lambda: _read(stream, _read_length(stream)), None))


# -- the far process ----------------------------------------------------------------------------
def _lint(session: Any, filename: str, text: str, config: Any, path: Optional[str], facts: Any,
          others: Optional[Others]) -> Tuple[list, List[str], Optional[dict], tuple]:
    result = lint_source(filename, text, config, path, facts=facts, session=session)
    diagnostics = list(result.diagnostics)
    plans = tuple(residual_plans(diagnostics))
    reasons: Optional[dict] = None
    if path is not None and others is not None:
        reasons = named_in_others(Path(path), text, config, plans, others, facts) if plans else {}
        if reasons:
            mark_unsafe(diagnostics, reasons, targets_in(text, config, facts))
    return diagnostics, list(result.errors), reasons, plans


def _fix(filename: str, text: str, config: Any, facts: Any, wanted: Sequence[Any]) -> list:
    """The edits of `wanted` (planned fixes of diagnostics of this text), in order."""
    from vjplint.server.fixes import attach_family_fixes

    attach_family_fixes(wanted, text, filename, config, None, facts)
    return [d.fix.edits if d.fix is not None else () for d in wanted]


def _fix_all(filename: str, text: str, config: Any, path: Optional[str], facts: Any, unsafe: bool,
             exclude: Sequence[str]) -> Optional[str]:
    from vjplint.fixes.apply import fix_text

    return fix_text(filename, text, config, unsafe, exclude=tuple(exclude), path=path, facts=facts).text


def _watch(parent: int, period_s: float = 1.0) -> None:
    """End this process once the server that started it (`parent`) is gone (vjplint.server's own
    watch of its editor, here without importing the server's package)."""
    while True:
        time.sleep(period_s)
        if os.getppid() != parent:
            os._exit(0)


def _hold() -> None:
    """Wait for the file VJPLINT_FAR_WAIT_FOR names, if set (tests)."""
    path = os.environ.get("VJPLINT_FAR_WAIT_FOR")
    while path and not os.path.exists(path):
        time.sleep(0.02)


def main() -> int:
    """Answer the server's requests until end of input: (True, value) or (False, why)."""
    import gc

    # A server killed (SIGTERM, SIGKILL) while this process starts or lints leaves it not running on
    # for nobody: the server's pid comes in the environment, as it may be gone before this line.
    parent = int(os.environ.get(PARENT_VARIABLE, "0") or 0) or os.getppid()
    if os.getppid() != parent:
        return 0
    threading.Thread(target=_watch, args=(parent,), name="vjplint-far-parent-watch", daemon=True).start()
    session = LintSession()
    lint_source("warm_up.py", WARM_UP, Config(), session=session)
    gc.freeze()
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            data = _read(source, _read_length(source))
        except EOFError:
            return 0
        try:
            kind, *args = pickle.loads(data, buffers=iter(lambda: _read(source, _read_length(source)), None))
            if kind == "lint":
                _hold()
                value: Any = _lint(session, *args)
            elif kind == "fix":
                value = _fix(*args)
            elif kind == "fix_all":
                value = _fix_all(*args)
            else:
                raise ValueError(f"unknown request {kind!r}")
            answer: Any = (True, value)
        except Exception as exc:  # answered: the server logs it and goes on
            answer = (False, f"{type(exc).__name__}: {exc}")
        try:
            try:
                send(sink, answer)  # (it pickles the whole answer before it writes a byte)
            except OSError:
                raise
            except Exception as exc:  # an answer that does not pickle
                send(sink, (False, f"{type(exc).__name__}: {exc}"))
        except OSError:
            return 0


if __name__ == "__main__":
    sys.exit(main())
