"""A second process for a big document's first lint: the Language Server's lint helper.

The server is one Python process, so its lints use one core however many the machine has. A
document's first lint is whole (vjplint.lint.incremental lints families of statements only after
it) and, on a big module, long: on the 10,000-line benchmark module, parsing and modelling
take a third of it and the rules the rest, the nondiff-inference rules (VJP1xx) about as much
as all the others together. So the helper, started with the server (its imports of the engine
run on another core while the server imports pygls), lints the same text with those rules
while the server lints it with the others (`engine.RuleSplit`); the server merges the two.
Each side parses and models the text itself: only findings cross.

- Only documents of SPLIT_MIN_LINES lines or more, only their first lint, only while the helper
  is idle; everything else is linted in the server as before.
- A helper that fails, dies or does not answer within COLLECT_TIMEOUT_S is not used again;
  its rules then run in the server, after the others (the lint is never lost, only slower).
- Protocol: length-prefixed pickles over the helper's stdin and stdout, one request at a time.
  Both pipes are private to the two processes (the server started the helper). The helper
  exits at end of input: when the server exits or dies.
- `VJPLINT_LINT_HELPER=0` starts no helper (one process, as before); on a machine with one
  core none is started either.

This module is imported before pygls (vjplint.server.main): it imports nothing of the engine
until a helper process runs `main()`.
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
from typing import Any, FrozenSet, List, Optional, Tuple
from vjplint.lint.engine import RuleSplit, lint_source
from vjplint.lint.session import LintSession
from vjplint.rules.registry import all_rules
from vjplint.settings.config import Config

log = logging.getLogger("vjplint.server")

HELPER_FAMILY = ("VJP1",)  # the rules the helper runs: the nondiff-argument family and its inference
# When the helper starts ahead of the server (a first lint sent at didOpen, while the server still
# imports the engine), it also runs the dataflow rules of bwd and jvp rules (VJP6xx): the two
# sides then finish about together (on the 10,000-line benchmark module).
AHEAD_FAMILY = ("VJP1", "VJP6")
def _min_lines(default: int = 2000) -> int:
    """The size of a document whose first lint is shared (VJPLINT_SPLIT_MIN_LINES: tests use
    small documents); a value that is not a number is ignored."""
    try:
        return max(1, int(os.environ.get("VJPLINT_SPLIT_MIN_LINES", default)))
    except ValueError:
        return default


SPLIT_MIN_LINES = _min_lines()
COLLECT_TIMEOUT_S = 10.0
_HEADER = struct.Struct("!Q")
# What the server and the helper lint first, to import what linting needs (rules, model, facts).
WARM_UP = b"import jax\n\n@jax.custom_vjp\ndef f(x):\n    return x\n\n\nf.defvjp(lambda x: (x, None), lambda r, g: (g,))\n"


# The helper's command: this vjplint (the directory holding the package is passed), never a
# module of the working directory (a user's `ast.py` there would shadow the standard library's,
# as `python -m vjplint` guards against too).
_BOOTSTRAP = """\
import os, sys
if sys.path and sys.path[0] in ("", ".", os.getcwd()):
    sys.path.pop(0)
root = sys.argv[1]
import importlib.util
spec = importlib.util.find_spec("vjplint")
if spec is None or spec.origin is None or os.path.dirname(os.path.dirname(os.path.abspath(spec.origin))) != root:
    sys.path.insert(0, root)  # another vjplint, or none, is importable: this one
from vjplint.server.lint_helper import main
sys.exit(main())
"""


def helper_codes(family: Tuple[str, ...] = HELPER_FAMILY) -> FrozenSet[str]:
    """The codes of the rules the helper runs (the registry imports every rule: not at start-up)."""
    return frozenset(code for code in all_rules() if code.startswith(family))


def wanted() -> bool:
    """Whether to start a helper: not when switched off, nor with a single core to run it on."""
    if os.environ.get("VJPLINT_LINT_HELPER", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return (os.cpu_count() or 1) >= 2


class LintHelper:
    """The server's side: the process, and one request at a time to it."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.lock = threading.Lock()
        self.busy = False
        self.broken = False
        self.splits = 0  # first lints shared with the helper
        self.at_open = 0  # of those, sent at didOpen (vjplint.server.analysis share_early)
        self.fallbacks = 0  # of those, where the helper failed and its rules ran in the server

    @classmethod
    def start(cls) -> Optional["LintHelper"]:
        """Start a helper (None when not wanted or when it cannot start)."""
        if not wanted():
            return None
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        try:
            proc = subprocess.Popen([sys.executable, "-c", _BOOTSTRAP, package_root], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE)
        except OSError as exc:
            log.info("no lint helper: %s", exc)
            return None
        return cls(proc)

    @property
    def alive(self) -> bool:
        return not self.broken and self.proc.poll() is None

    def describe(self) -> str:
        state = "running" if self.alive else "stopped"
        notes = [f"{self.at_open} sent at didOpen"] if self.at_open else []
        notes += [f"{self.fallbacks} linted here after it failed"] if self.fallbacks else []
        return (f"lint helper: pid {self.proc.pid}, {state}; first lints shared with it: {self.splits}"
                + (f" ({'; '.join(notes)})" if notes else ""))

    def split(self, filename: str, text: str, config: Any, path: Optional[str],
              family: Tuple[str, ...] = HELPER_FAMILY, facts: Any = None) -> Optional[Any]:
        """Send `text` to the helper and return the engine's RuleSplit for the rest of the lint
        (the helper runs the rules whose codes start with one of `family`); None (lint it all
        here) when the helper is busy or gone."""
        with self.lock:
            if self.busy or not self.alive:
                return None
            self.busy = True
            self.splits += 1
        reply: List[Any] = []
        done = threading.Event()

        def exchange() -> None:
            try:
                data = pickle.dumps((filename, text, config, path, family, facts), protocol=pickle.HIGHEST_PROTOCOL)
                self.proc.stdin.write(_HEADER.pack(len(data)) + data)  # type: ignore[union-attr]
                self.proc.stdin.flush()  # type: ignore[union-attr]
                reply.append(pickle.loads(_read(self.proc.stdout, _read_length(self.proc.stdout))))
            except Exception as exc:  # a dead helper, a broken pipe, an answer that does not load
                log.info("lint helper failed: %s", exc)
                self.broken = True
            finally:
                with self.lock:
                    self.busy = False
                done.set()

        threading.Thread(target=exchange, name="vjplint-helper-io", daemon=True).start()
        codes = helper_codes(family)  # after sending: in a server just started, this may wait for its imports

        def collect() -> Optional[Tuple[List[Any], List[str]]]:
            answered = done.wait(COLLECT_TIMEOUT_S)
            value = reply[0] if reply else None
            if not answered or not isinstance(value, tuple):
                if not answered:
                    log.info("lint helper did not answer in %.0f s: not used again", COLLECT_TIMEOUT_S)
                    self.stop()
                self.fallbacks += 1
                return None
            return value

        return RuleSplit(codes, collect)

    def stop(self) -> None:
        self.broken = True
        try:
            self.proc.kill()
        except OSError:
            pass


def _read_length(stream: Any) -> int:
    return _HEADER.unpack(_read(stream, _HEADER.size))[0]


def _read(stream: Any, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            raise EOFError("the other process closed the pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# -- the helper process ------------------------------------------------------------------------
def main() -> int:
    """Lint what the server sends, with the rules it names, until end of input."""
    import gc

    session = LintSession()  # this helper's, for its life
    lint_source("warm_up.py", WARM_UP, Config(), session=session)
    gc.freeze()  # the engine's modules: out of the collector's sight, as in the server
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            data = _read(source, _read_length(source))
        except EOFError:
            return 0
        value: Optional[Tuple[List[Any], List[str]]] = None
        kept: List[object] = []  # the model: freed once the answer is out (15 ms on 10,000 lines)
        # The collector stays paused until then, as in the server's lints: a scan of the live
        # model (one starts at the first allocations after it runs again) would delay the answer.
        gc.disable()
        try:
            filename, text, config, path, family, facts = pickle.loads(data)
            codes = frozenset(code for code in all_rules() if code.startswith(family))
            result = lint_source(filename, text, config, path, rules=codes, keep=kept, session=session,
                                 **({"facts": facts} if facts is not None else {}))
            if result.findings is not None:
                value = (result.findings, result.errors)
        except Exception as exc:  # answered with None: the server runs these rules itself
            print(f"vjplint lint helper: {type(exc).__name__}: {exc}", file=sys.stderr)
        try:
            answer = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # a finding that does not pickle: the server runs these rules
            print(f"vjplint lint helper: {type(exc).__name__}: {exc}", file=sys.stderr)
            answer = pickle.dumps(None)
        try:
            sink.write(_HEADER.pack(len(answer)) + answer)
            sink.flush()
        except OSError:
            return 0
        finally:
            kept.clear()
            gc.enable()


if __name__ == "__main__":
    sys.exit(main())
