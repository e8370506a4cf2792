"""File discovery: walk the given paths, honour excludes and .gitignore, skip symlink loops."""

from __future__ import annotations

import errno
import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from functools import lru_cache
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from vjplint.settings.config import Config

PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIXES = PYTHON_SUFFIXES + (".ipynb",)  # with `notebooks = true` (the default)


@dataclass(frozen=True)
class Problem:
    """A path that could not be walked: reported on stderr, the run goes on."""

    path: str
    message: str
    fatal: bool = False  # a path named on the command line that does not exist: exit 2


def _broken_link(path: Path) -> str:
    """Why `path`, neither a file nor a directory to walk, is not linted."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop"
        if exc.errno != errno.ENOENT:
            return f"cannot read: {exc.strerror or exc}"
        return "is a broken symbolic link"
    kind = _special_kind(st.st_mode)
    if os.path.islink(path):
        return f"is a symbolic link to {os.path.realpath(path)}, which is not a regular file ({kind}); skipped"
    return f"is not a regular file ({kind}); skipped"


def _special_kind(mode: int) -> str:
    import stat

    for test, kind in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a file or a directory"


def _device(path: Path) -> bool:
    """A device or a socket: reading one as a module never ends (/dev/zero) or fails. A named
    pipe named on the command line is read (`vjplint <(cat x.py)`)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode)


def _excluded(path: Path, root: Path, patterns: Sequence[str]) -> bool:
    if not patterns:
        return False
    name = path.name
    try:
        relative = path.relative_to(root).as_posix()
    except ValueError:
        relative = path.as_posix()
    match_name, match_relative = _matchers(tuple(patterns))
    return bool(match_name(os.path.normcase(name)) or match_relative(os.path.normcase(relative)))


@lru_cache(maxsize=16)
def _matchers(patterns: Tuple[str, ...]) -> Tuple[Callable, Callable]:
    """`fnmatch` of a name against any pattern, or of a relative path against any pattern or
    `pattern/*` (one fnmatch call per pattern was most of a warm run). Patterns without wildcards
    (all the default ones) are a set and prefixes; only the others become a regex."""
    literal = [p for p in patterns if not any(c in p for c in "*?[")]
    globs = [p for p in patterns if any(c in p for c in "*?[")]
    exact = frozenset(os.path.normcase(p) for p in literal)
    prefixes = tuple(os.path.normcase(p.rstrip("/") + "/") for p in literal)
    name_re = re.compile("|".join(fnmatch.translate(os.path.normcase(p)) for p in globs)).match if globs else None
    path_re = re.compile("|".join([fnmatch.translate(os.path.normcase(p)) for p in globs] + [
        fnmatch.translate(os.path.normcase(p.rstrip("/") + "/*")) for p in globs])).match if globs else None

    def match_name(name: str) -> bool:
        return name in exact or (name_re is not None and name_re(name) is not None)

    def match_relative(relative: str) -> bool:
        return (relative in exact or relative.startswith(prefixes)
                or (path_re is not None and path_re(relative) is not None))

    return match_name, match_relative


@lru_cache(maxsize=16)
def _entry_matcher(patterns: Tuple[str, ...]) -> Callable:
    """fnmatch of an entry's own relative path against any pattern (ruff's matching while it walks,
    its path made absolute against the configuration's directory): what lies below an excluded
    directory is never reached from above it, and a directory named on the command line is walked
    even when it lies inside one (`vjplint fixtures/rules/VJP101/` with `fixtures` excluded), unless
    --force-exclude."""
    literal = [p for p in patterns if not any(c in p for c in "*?[")]
    globs = [p for p in patterns if any(c in p for c in "*?[")]
    exact = frozenset(os.path.normcase(p.rstrip("/")) for p in literal)
    path_re = re.compile("|".join(fnmatch.translate(os.path.normcase(p.rstrip("/"))) for p in globs)).match \
        if globs else None

    def match_own(relative: str) -> bool:
        return relative in exact or (path_re is not None and path_re(relative) is not None)

    return match_own


class _GitIgnores:
    """`.gitignore` files from the repository root down, compiled with pathspec."""

    def __init__(self) -> None:
        self._specs: Dict[Path, Optional[object]] = {}
        self._chains: Dict[Path, List[Tuple[Path, object]]] = {}

    def _spec(self, directory: Path) -> Optional[object]:
        if directory not in self._specs:
            spec = None
            ignore = directory / ".gitignore"
            if ignore.is_file():
                try:
                    import pathspec

                    lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.PathSpec.from_lines("gitwildmatch", lines)
                except (OSError, ImportError):
                    spec = None
            self._specs[directory] = spec
        return self._specs[directory]

    def _chain(self, directory: Path) -> List[Tuple[Path, object]]:
        """The (directory, spec) pairs that apply below `directory`, up to the repository root,
        computed once per directory (not once per file)."""
        chain = self._chains.get(directory)
        if chain is None:
            spec = self._spec(directory)
            chain = [(directory, spec)] if spec is not None else []
            parent = directory.parent
            if parent != directory and not (directory / ".git").exists():
                chain = chain + self._chain(parent)
            self._chains[directory] = chain
        return chain

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for directory, spec in self._chain(path.parent):
            relative = path.relative_to(directory).as_posix() + ("/" if is_dir else "")
            if spec.match_file(relative):  # type: ignore[attr-defined]
                return True
        return False

    def prefixes(self, directory: Path) -> List[Tuple[object, str]]:
        """For the entries of `directory`: each applicable spec with the path prefix that makes
        an entry's name relative to the spec's directory (what `ignored` computes per entry)."""
        out = []
        for base, spec in self._chain(directory):
            relative = directory.relative_to(base).as_posix()
            out.append((spec, "" if relative == "." else relative + "/"))
        return out


SettingsForDir = Callable[..., Config]  # (directory, has_pyproject=None) -> Config (vjplint.project.workspace)


def discover(paths: Sequence[str], settings_for_dir: SettingsForDir, problems: List[Problem], *,
             force_exclude: bool = False, visited: Optional[List[str]] = None) -> Iterator[Tuple[Path, Config]]:
    """Python files under `paths`, each with the settings of its directory. Explicit files are
    linted even when excluded (ruff's convention) unless `force_exclude`, which pre-commit needs
    since it names every file. Each directory's `exclude` patterns and `.gitignore` use come from
    its own settings, matched relative to that configuration's directory. `visited` receives
    every directory walked and every .gitignore consulted (with the directories searched for
    them): what the result depends on besides the files."""
    gitignores = _GitIgnores()
    seen: set = set()
    for raw in paths:
        path = Path(raw)
        if not os.path.lexists(path):
            problems.append(Problem(raw, "no such file or directory", fatal=True))
            continue
        if _device(path):
            problems.append(Problem(raw, _broken_link(path), fatal=True))
            continue
        if path.is_file() or (path.exists() and not path.is_dir()):
            config = settings_for_dir(os.path.dirname(os.path.abspath(raw)))
            if path.suffix == ".ipynb" and not config.notebooks:  # linted as cells (vjplint.syntax.notebook) or not at all
                if not force_exclude:  # pre-commit names every notebook: as excluded, silently
                    problems.append(Problem(raw, "notebooks are turned off (`notebooks = false`); skipped"))
                continue
            if force_exclude:
                root, patterns = _root_and_patterns(config)
                real = path.resolve()
                if _excluded(real, root, patterns) or any(_excluded(parent, root, patterns) for parent in real.parents):
                    continue
            yield path, config
            continue
        if not path.is_dir():  # named on the command line, it cannot be read: as a missing file
            problems.append(Problem(raw, _broken_link(path), fatal=True))
            continue
        if force_exclude:
            root, patterns = _root_and_patterns(settings_for_dir(os.path.dirname(os.path.abspath(raw))))
            real = path.resolve()  # the directory or one of its parents below the configuration's directory
            if any(_excluded(d, root, patterns) for d in (real, *real.parents) if root in d.parents):
                continue
        yield from _walk(path, settings_for_dir, gitignores, problems, seen, visited)
    if visited is not None:  # each .gitignore looked for, present or absent (not the directories' mtimes,
        for directory in list(gitignores._specs):  # which change whenever anything is created there)
            visited.append(str(directory / ".gitignore"))
            if not (directory / ".git").exists():  # a new repository root would end the search earlier;
                visited.append(str(directory / ".git"))  # an existing one's mtime moves with every git command


def _root_and_patterns(config: Config) -> Tuple[Path, Tuple[str, ...]]:
    root = Path(config.root).resolve() if config.root else Path.cwd().resolve()
    return root, tuple(config.exclude) + tuple(config.extend_exclude)


def _walk(top: Path, settings_for_dir: SettingsForDir, gitignores: _GitIgnores, problems: List[Problem],
          seen: set, visited: Optional[List[str]] = None) -> Iterator[Tuple[Path, Config]]:
    stack: List[Tuple[Path, Optional[str]]] = [(top, None)]
    while stack:
        directory, real = stack.pop()
        if real is None:  # the top, or a symbolic link: resolve (a plain subdirectory's real
            try:          # path is its parent's plus its name)
                real = str(directory.resolve())
            except (OSError, RuntimeError):
                problems.append(Problem(str(directory), "cannot resolve (symlink loop?)"))
                continue
        if real in seen:
            continue  # a symlink loop or a directory reached twice
        seen.add(real)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(str(directory), f"cannot read directory: {exc.strerror or exc}"))
            continue
        if visited is not None:
            visited.append(str(directory))
        config = settings_for_dir(real, any(e.name == "pyproject.toml" for e in entries))
        root, patterns = _root_and_patterns(config)
        subdirs = []
        # Per directory, not per entry: the relative path `_excluded` matches and the .gitignore
        # specs that apply (a warm run is mostly this loop).
        try:
            base = Path(real).relative_to(root).as_posix()
        except ValueError:
            base = directory.as_posix()
        base = "" if base == "." else base.rstrip("/") + "/"
        match_name = _matchers(patterns)[0] if patterns else None
        match_own = _entry_matcher(patterns) if patterns else None
        specs = gitignores.prefixes(directory) if config.respect_gitignore else []
        suffixes = NOTEBOOK_SUFFIXES if config.notebooks else PYTHON_SUFFIXES
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
                is_file = entry.is_file()
            except OSError:  # e.g. ELOOP: DirEntry only swallows ENOENT
                path = Path(entry.path)
                message = _broken_link(path)
                if not _excluded(path, root, patterns) and (
                        name.endswith(suffixes) or message.endswith("loop")):
                    problems.append(Problem(str(path), message))
                continue
            if is_file and not name.endswith(suffixes):
                continue  # neither walked nor linted, whatever the excludes say
            if match_name is not None and (match_name(os.path.normcase(name))
                                           or match_own(os.path.normcase(base + name))):  # type: ignore
                continue
            suffix = "/" if is_dir else ""
            if any(spec.match_file(prefix + name + suffix) for spec, prefix in specs):  # type: ignore[attr-defined]
                continue
            path = Path(entry.path)
            if is_dir:
                subdirs.append((path, None if entry.is_symlink() else os.path.join(real, name)))
            elif is_file and entry.name.endswith(suffixes):
                yield path, config
            elif not is_file and not is_dir and entry.is_symlink() and entry.name.endswith(suffixes):
                problems.append(Problem(str(path), _broken_link(path)))
        stack.extend(reversed(subdirs))



def display_path(path: Path) -> str:
    """How a file is named in every report: relative to the working directory when it is under
    it, else absolute (ruff's rule: never `../../x.py`, which a CI annotation cannot place)."""
    if not path.is_absolute() and not path.drive and ".." not in path.parts:
        return str(path)  # what relpath returns for these, without its two abspath calls
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    if absolute == cwd or absolute.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, cwd)
    return absolute
