"""Answers that need no linting machinery: `--version`, files that cannot hold a finding, and the
replay of an unchanged run. Only `os` and `sys` (and json/zlib, tomllib when there is a
pyproject.toml) are imported here: argparse, pathlib and dataclasses cost two to three times
Python's own start, more than the whole answer.

1. Pre-commit hands vjplint the changed files, and most commits touch no custom derivative: the
   files are read and byte-searched for the names a finding needs, as the full run does first.
2. A check run that ended cleanly (no warnings, no internal errors) records what it printed, its
   exit code and the size and mtime of everything its answer depends on: the files it linted, the
   directories it walked (an added, removed or renamed entry changes its directory's mtime), the
   .gitignore files and pyproject.toml it read and the directories searched for them. The same
   command in the same directory, with the same vjplint, replays that answer when every one of
   them is unchanged and was last modified well before the recorded run began (an edit in the
   same clock tick would not show in the mtime: the "racy git" rule).

Anything else returns None and the full command runs, so output and exit codes are always the
full command's.
"""

from __future__ import annotations

import os
import stat
import sys
import time

from vjplint import __version__

from vjplint.settings.cache_files import code_fingerprint, ensure_cache_root, is_int, short_name  # noqa: F401 - read here and by the replay's users
from vjplint.settings.options import colour_wanted, flags

from vjplint.syntax.names import PREFILTER_NAMES  # imports nothing: the rules' union, without importing them
QUIET_FLAGS = flags(value=False, trait="harmless")  # change nothing when there is nothing to report
ALL_PASSED = "All checks passed!\n"  # vjplint.output.text for no diagnostics (a test keeps it equal)
# The `vjplint check` options (vjplint.settings.options), to find the paths, --config and --cache-dir.
BARE_OPTIONS = flags(value=False)
VALUE_OPTIONS = flags(value=True)
NEVER_REPLAYED = flags(value=False, trait="no-replay") | flags(value=True, trait="no-replay")
REPLAY_FORMAT = 1
RACY_NS = 2_000_000_000  # vjplint.batch.cache.RACY_NS


def try_check(argv: list) -> "int | None":
    """The exit code when an answer was printed here, else None."""
    args = argv[1:] if argv and argv[0] == "check" else argv
    if args == ["--version"]:
        sys.stdout.write(f"vjplint {__version__}\n")
        return 0
    fast = _no_candidates(args)
    return fast if fast is not None else replay(args)


def _no_candidates(args: list) -> "int | None":
    # Wrappers inferred from the run's modules (vjplint.project.index) need no check here: each is
    # defined, ultimately, by a file of the run that names custom_vjp/custom_jvp (or a configured
    # alias), and any such file already makes this answer None.
    paths = [a for a in args if a not in QUIET_FLAGS]
    if not paths or any(p.startswith("-") or not p for p in paths) or os.environ.get("VJPLINT_OUTPUT_FORMAT"):
        return None
    if not all(path.endswith((".py", ".pyi")) and os.path.isfile(path) for path in paths):
        return None  # missing, a directory, a notebook, a FIFO...: the full run's business
    names_of: dict = {}  # directory -> the prefilter names of its configuration
    for path in paths:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None  # the full run reports it
        # NUL: UTF-16/32, the full run says so. A configuration only adds names: a file holding a
        # default one is a candidate whatever pyproject.toml says (not read here, then: a pre-commit
        # run on a changed custom-derivative module goes straight to the full run)
        if b"\x00" in data or any(name in data for name in PREFILTER_NAMES):
            return None
        directory = os.path.dirname(os.path.realpath(path))
        if directory not in names_of:
            _, found, table = _pyproject(directory)
            names_of[directory] = PREFILTER_NAMES
            if found is not None:  # a [tool.vjplint] table: its aliases make more files candidates, and it must
                names_of[directory] = _known_names(found, table)  # be valid: known from a full run, or no answer
        names = names_of[directory]
        if names is None or any(name in data for name in names):
            return None
    if "-q" not in args and "--quiet" not in args:
        sys.stdout.write(ALL_PASSED)
        sys.stdout.flush()
    return 0


def _pyproject(first: str) -> "tuple":
    """vjplint.project.workspace's walk from a path: (directories searched, the pyproject.toml the full run
    reads or fails on, or None; its [tool.vjplint] table or None).
    A file that cannot be read or parsed is returned with the table {"": "invalid"}."""
    start = os.path.realpath(first if os.path.exists(first) else os.getcwd())
    directory = start if os.path.isdir(start) else os.path.dirname(start)
    searched = []
    while True:
        searched.append(directory)
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate):
            try:
                data = _load_toml(candidate)
            except (OSError, ValueError):  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
                return searched, candidate, {"": "invalid"}
            tool = data.get("tool")
            if isinstance(tool, dict) and "vjplint" in tool:
                table = tool["vjplint"]
                return searched, candidate, table if isinstance(table, dict) else {"": "invalid"}
        parent = os.path.dirname(directory)
        if parent == directory:
            return searched, None, None
        directory = parent


def _load_toml(path: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    with open(path, "rb") as handle:
        return tomllib.load(handle)


# -- replaying an unchanged run ------------------------------------------------------------------
def parse_check_args(args: list) -> "dict | None":
    """paths, --config and --cache-dir of a `check` command line, or None when it holds anything
    this small parser does not know (then there is no replay)."""
    paths, options = [], {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in BARE_OPTIONS:
            options[arg] = True
        elif arg in VALUE_OPTIONS:
            if i + 1 >= len(args):
                return None
            options[arg] = args[i + 1]
            i += 1
        elif arg.startswith("--") and arg.split("=", 1)[0] in VALUE_OPTIONS and "=" in arg:
            options[arg.split("=", 1)[0]] = arg.split("=", 1)[1]
        elif arg.startswith("-") or not arg:
            return None  # "-" (stdin), "-j2", "--", abbreviations argparse accepts...
        else:
            paths.append(arg)
        i += 1
    return {"paths": paths or ["."], "options": options}


def _record_path(args: list) -> "tuple":
    """(the record file, its key) for this command line, or (None, None) when it is not replayed."""
    parsed = parse_check_args(args)
    if parsed is None or any(o in NEVER_REPLAYED for o in parsed["options"]):
        return None, None
    options = parsed["options"]
    if "--config" in options:
        config_file = os.path.realpath(options["--config"])
        try:
            tool = _load_toml(config_file).get("tool")
        except (OSError, ValueError):
            return None, None
        table = tool.get("vjplint") if isinstance(tool, dict) else None
        root = os.path.dirname(config_file)
    else:
        _, found, table = _pyproject(parsed["paths"][0])
        root = os.path.dirname(found) if found else os.getcwd()
    if isinstance(table, dict) and "" in table:
        return None, None  # the full run reports the broken file
    if "--cache-dir" in options:
        cache = os.path.abspath(options["--cache-dir"])
    else:
        cache = _cache_dir(os.path.join(root, "pyproject.toml"), table)
    build = code_fingerprint()
    key = "\n".join(["\0".join(args), os.getcwd(), os.environ.get("VJPLINT_OUTPUT_FORMAT", ""),
                     os.environ.get("VJPLINT_DOCS_URL", ""), build])  # the rule links a replayed output holds
    return os.path.join(cache, short_name(build), f"replay-{short_name(key)}.json"), key


def _cache_dir(pyproject: "str | None", table: "dict | None") -> str:
    """vjplint.batch.cache.cache_root for the configuration in `pyproject` (the working directory's
    .vjplint_cache when there is none)."""
    root = os.path.dirname(pyproject) if pyproject else os.getcwd()
    if isinstance(table, dict) and isinstance(table.get("cache-dir"), str):
        return os.path.join(root, os.path.expanduser(table["cache-dir"]))
    return os.path.join(root, ".vjplint_cache")


def _config_record(pyproject: str, table: "dict | None") -> "tuple":
    build = code_fingerprint()
    key = "\n".join([pyproject, build])
    return os.path.join(_cache_dir(pyproject, table), short_name(build), f"config-{short_name(key)}.json"), key


def _known_names(pyproject: str, table: "dict | None") -> "tuple | None":
    """The prefilter names of a configuration an earlier full run validated, if the file is
    unchanged since (and was old enough then to trust its mtime)."""
    if not isinstance(table, dict) or "" in table or "extend" in table:
        return None  # broken, or inheriting from a file this record does not watch
    path, key = _config_record(pyproject, table)
    import json

    try:
        with open(path, "rb") as handle:
            record = json.loads(handle.read())
        if not _valid_config(record, key):
            return None  # damaged: the next full run writes a good one over it
        st = os.stat(pyproject)
        if (st.st_size != record["size"] or st.st_mtime_ns != record["mtime"]
                or st.st_mtime_ns >= record["made_ns"] - RACY_NS):
            return None
        return tuple(name.encode("utf-8", "surrogateescape") for name in record["names"])
    except (OSError, ValueError, RecursionError):
        return None


def remember_config(pyproject: str, made_ns: int, names: "tuple") -> None:
    """Note that the full run found `pyproject`'s [tool.vjplint] valid, with these prefilter names."""
    import json

    try:
        _, found, table = _pyproject(pyproject)
        if found != pyproject or _known_names(pyproject, table) == tuple(names):
            return  # not the file the fast path would find, or already noted
        path, key = _config_record(pyproject, table)
        st = os.stat(pyproject)
        payload = json.dumps({"format": REPLAY_FORMAT, "key": key, "size": st.st_size, "mtime": st.st_mtime_ns,
                              "made_ns": made_ns, "names": [n.decode("utf-8", "surrogateescape") for n in names]})
        _write_record(path, payload)
    except OSError:
        pass


def replay(args: list) -> "int | None":
    path, key = _record_path(args)
    if path is None:
        return None
    parsed = parse_check_args(args) or {"options": {}}
    if colour_wanted(parsed["options"].get("--color"), os.environ, sys.stdout.isatty()):
        return None  # the record is plain text; a coloured answer is the full run's
    import json

    try:
        with open(path, "rb") as handle:
            record = json.loads(handle.read())
        if not _valid_replay(record, key):
            return None  # a damaged record counts as none: the full run writes a good one over it
        limit = record["made_ns"] - RACY_NS
        for name, is_dir, size, mtime in record["stats"]:
            if is_dir is None:  # recorded as absent (a pyproject.toml or .gitignore that was looked for)
                if os.path.lexists(name):
                    return None
                continue
            st = os.stat(name)
            if (st.st_mtime_ns != mtime or st.st_mtime_ns >= limit or is_dir != stat.S_ISDIR(st.st_mode)
                    or (not is_dir and st.st_size != size)):
                return None
        stdout, code = record["stdout"], record["rc"]
    except (OSError, ValueError, RecursionError):
        return None  # no record, one nested too deep to read, or something it depends on is gone
    sys.stdout.write(stdout)
    sys.stdout.flush()
    return int(code)


def _valid_replay(record: object, key: str) -> bool:
    """Whether a replay record read back has the format, key and field types `record` writes
    (any JSON may sit in a damaged or foreign file: `[]`, `null`, a stat row of the wrong length)."""
    if not (isinstance(record, dict) and record.get("format") == REPLAY_FORMAT and record.get("key") == key
            and is_int(record.get("made_ns")) and isinstance(record.get("stdout"), str)
            and is_int(record.get("rc")) and isinstance(record.get("stats"), list)):
        return False
    try:
        record["stdout"].encode("utf-8")  # a lone surrogate the full run could not have printed
    except UnicodeEncodeError:
        return False
    for row in record["stats"]:
        if not (isinstance(row, list) and len(row) == 4 and isinstance(row[0], str) and row[0]
                and "\0" not in row[0] and (row[1] is None or isinstance(row[1], bool))
                and is_int(row[2]) and is_int(row[3])):
            return False
    return True


def _valid_config(record: object, key: str) -> bool:
    """The same for a configuration record (`remember_config`)."""
    return (isinstance(record, dict) and record.get("format") == REPLAY_FORMAT and record.get("key") == key
            and is_int(record.get("size")) and is_int(record.get("mtime")) and is_int(record.get("made_ns"))
            and isinstance(record.get("names"), list) and all(isinstance(n, str) and n for n in record["names"]))


def record(args: list, made_ns: int, depends_on: "list", stdout: str, code: int) -> None:
    """Store a clean run's answer for `replay` (see the module doc); never fails the run."""
    path, key = _record_path(args)
    if path is None:
        return
    import json

    parsed = parse_check_args(args)
    assert parsed is not None
    names = list(depends_on) + list(parsed["paths"])
    if "--config" in parsed["options"]:
        names.append(parsed["options"]["--config"])
    else:
        searched, found, _ = _pyproject(parsed["paths"][0])
        names.extend(os.path.join(d, "pyproject.toml") for d in searched)  # present or absent
        if found:
            names.append(found)
    stats, seen = [], set()
    try:
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            try:
                st = os.stat(name)
            except FileNotFoundError:  # looked for and not there: the answer holds while it stays absent
                stats.append([name, None, 0, 0])
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            stats.append([name, is_dir, 0 if is_dir else st.st_size, st.st_mtime_ns])
        payload = json.dumps({"format": REPLAY_FORMAT, "key": key, "made_ns": made_ns, "stats": stats,
                              "stdout": stdout, "rc": code}, separators=(",", ":"), ensure_ascii=False)
        _write_record(path, payload)
    except OSError:
        pass  # something vanished meanwhile, or a read-only tree: no replay, no harm


def _write_record(path: str, payload: str) -> None:
    """Write a record under the cache root (made on first use), atomically."""
    ensure_cache_root(os.path.dirname(os.path.dirname(path)))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(payload)
    os.replace(tmp, path)


def now_ns() -> int:
    return time.time_ns()
