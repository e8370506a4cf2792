"""What a check of one file (a pre-commit run on a few changed modules) spends outside the
analysis: the way out of the process, and the modules it imports (docs/performance.md, "One file
and the cold tree"). Real CLI in subprocesses; no timing is asserted, only what the run does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT, RULE_FIXTURES, pythonpath

FIRING = RULE_FIXTURES / "VJP101" / "fire_clip_gradient.py"


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": pythonpath(ROOT), "NO_COLOR": "1"}
    env.pop("VJPLINT_OUTPUT_FORMAT", None)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


def test_the_way_out_keeps_exit_time_work_and_the_whole_output(tmp_path: Path) -> None:
    """`run()` ends the process without the interpreter's shutdown only when nothing waits for it:
    an `atexit` callback registered before still runs, and the exit code is the check's."""
    code = textwrap.dedent(f"""\
        import atexit, sys
        atexit.register(lambda: print("exit-time work ran", flush=True))
        sys.argv = ["vjplint", "check", "--no-cache", {str(FIRING)!r}]
        from vjplint.cli import run
        sys.exit(run())
        """)
    done = _python(code, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[-1] == "exit-time work ran"
    assert "VJP101" in done.stdout


def test_a_hard_exit_loses_no_output(tmp_path: Path) -> None:
    """Without exit-time work the process ends at once, after the output is flushed: the JSON of
    every finding of the rule fixtures (hundreds of kilobytes through a pipe) arrives whole, and
    no exit-time callback registered after the check would have run."""
    code = textwrap.dedent(f"""\
        import sys
        sys.argv = ["vjplint", "check", "--no-cache", "--jobs", "1", "--output-format", "json", {str(RULE_FIXTURES)!r}]
        import vjplint.cli as cli
        leave = cli._leave_now

        def spy(rc):
            import atexit
            print("callbacks", atexit._ncallbacks(), file=sys.stderr, flush=True)
            leave(rc)
            print("still here", file=sys.stderr, flush=True)

        cli._leave_now = spy
        sys.exit(cli.run())
        """)
    done = _python(code, tmp_path)
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)
    assert len(findings) > 300
    assert "still here" not in done.stderr
    assert "callbacks 0" in done.stderr
