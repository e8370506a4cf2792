"""Command line: argument parsing, exit codes and printing only; work happens in the core.

`vjplint.cli.check` (lint and fix), `.fix` (the file I/O of --fix/--diff), `.rule`, `.verify` and
the server are the commands; `.options` is the table of `check` options that the pre-commit fast
path reads too; `.report` prints outcomes. Imports are lazy: `vjplint --version` and runs over
files with no custom derivatives import neither libcst nor JAX (vjplint.batch.fastpath).

May import every other layer: the command line is the top.
"""

from __future__ import annotations

import sys
from vjplint.errors import ConfigError, UsageError

TYPE_CHECKING = False  # not typing's: importing typing is itself a cost here
if TYPE_CHECKING:
    from typing import Optional, Sequence

COMMANDS = ("check", "rule", "verify", "check-grads", "server")


def main(argv: "Optional[Sequence[str]]" = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in args

    try:
        if not args or args[0] not in ("rule", "server", "verify", "check-grads"):
            from vjplint.batch.fastpath import try_check

            fast = try_check(args)  # files that cannot hold a finding: answered without the machinery
            if fast is not None:
                return fast
        if args and args[0] == "rule":
            from vjplint.cli import rule

            return rule.run(args[1:])
        if args and args[0] == "server":
            from vjplint.server import main as server_main

            return server_main(args[1:])
        if args and args[0] == "verify":
            from vjplint.cli import verify

            return verify.run(args[1:])
        if args and args[0] == "check-grads":
            from vjplint.cli import check_grads

            return check_grads.run(args[1:])
        prog = "vjplint"
        if args and args[0] == "check":
            args, prog = args[1:], "vjplint check"
        elif args and not args[0].startswith("-"):
            _refuse_mistyped_command(args[0])
        from vjplint.batch import class_code

        class_code.use_kept_code()  # before the machinery's classes are made
        from vjplint.cli import check

        return check.run(args, prog)
    except (UsageError, ConfigError) as exc:
        print(f"vjplint: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        describe = getattr(exc, "describe", None)  # vjplint.cli.fix.FixInterrupted: what was written
        print(describe() if describe is not None else "vjplint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # pragma: no cover - the last guard; tests assert it is never reached
        if verbose:
            raise
        print(f"vjplint: internal error: {type(exc).__name__}: {exc} (run with --verbose for a traceback)",
              file=sys.stderr)
        return 2


def run() -> int:
    """`main`, then the way out with Ctrl-C ignored: the run is over (its output written), and a
    KeyboardInterrupt raised while the interpreter shuts down (joining a worker pool's thread in
    threading._shutdown, say) would print a traceback after it, and change the exit code."""
    import signal

    code = None
    try:
        code = main()
    except KeyboardInterrupt:  # landed between main's own handler and its return
        pass
    while True:  # until the handler is in place: the signal may land on any of these lines
        try:
            if _main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                # and blocked: CPython puts the default disposition back while it finalises, and a
                # Ctrl-C then would end the process by the signal (status -2); a blocked one stays
                # pending and goes with the process
                if hasattr(signal, "pthread_sigmask"):
                    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            break
        except KeyboardInterrupt:
            continue
    if code is None:
        print("vjplint: interrupted", file=sys.stderr)
        code = 130
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    class_code = sys.modules.get("vjplint.batch.class_code")
    if class_code is not None:
        class_code.keep()
    _leave_now(code)
    return code


def _leave_now(code: int) -> None:
    """End the process here when nothing waits for the interpreter's shutdown: tearing down the
    modules and the last file's model cost about 40 ms of a 190 ms check of one 700-line file
    (docs/performance.md, "One file and the cold tree"), paid by every pre-commit run. Anything
    that registered exit-time work (multiprocessing's pool finalizer, logging, a weakref.finalize,
    vjplint.record's writer: `atexit`'s callbacks) or a thread still running keeps the ordinary
    way out; so does a profiled or traced run, and a Python without `atexit._ncallbacks`. The output is flushed above, and every
    file vjplint writes is closed before its command returns."""
    import atexit
    import os

    callbacks = getattr(atexit, "_ncallbacks", None)
    threading = sys.modules.get("threading")
    if callbacks is None or callbacks() or (threading is not None and threading.active_count() > 1):
        return
    if sys.getprofile() is not None or sys.gettrace() is not None:  # `python -m cProfile -m vjplint`: its
        return  # report is written after the script returns
    if sys.stdout is None or sys.stderr is None or sys.stdout.closed or sys.stderr.closed:
        return
    os._exit(code)


def _main_thread() -> bool:
    threading = sys.modules.get("threading")  # not imported: no thread was started through it
    return threading is None or threading.current_thread() is threading.main_thread()


def _refuse_mistyped_command(word: str) -> None:
    """`vjplint rules` is a typo for `vjplint rule`, not a path to lint (when no such path exists)."""
    import os

    if os.path.exists(word) or word == "-":
        return
    import difflib

    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    if close:
        raise UsageError(f"{word!r} is neither a command nor a file or directory; did you mean `vjplint {close[0]}`?")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
