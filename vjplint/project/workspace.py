"""Which files, with which settings: the layer the command line, the Language Server and
`vjplint verify` share, so that they resolve configuration identically.

Configuration is hierarchical, like ruff's: each file uses the nearest `pyproject.toml` with a
`[tool.vjplint]` table, searching from the file's directory upwards (`extend` in that table
inherits another file's). `exclude` and `per-file-ignores` patterns are matched relative to the
directory of the configuration that applies. An explicit `--config FILE` applies to every file.
Command-line (or editor) overrides of the rule selection apply on top of whichever file is used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from vjplint.settings.config import Config, load_config, read_tool_table, shown, with_overrides
from vjplint.errors import ConfigError
from vjplint.project.discover import discover

PYPROJECT = "pyproject.toml"


@dataclass(frozen=True)
class Overrides:
    """Settings given on the command line or by the editor: they win over every file."""

    select: Optional[Tuple[str, ...]] = None
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    cache_dir: Optional[str] = None  # absolute
    extend_ignore: Tuple[str, ...] = ()
    fixable: Optional[Tuple[str, ...]] = None
    unfixable: Tuple[str, ...] = ()
    extend_fixable: Tuple[str, ...] = ()
    # --exclude replaces every file's `exclude`, --extend-exclude adds to it; a pattern with a `/`
    # is relative to the working directory (ruff's), a bare name matches at any depth.
    exclude: Optional[Tuple[str, ...]] = None
    extend_exclude: Tuple[str, ...] = ()

    def selection(self) -> dict:
        """The keyword arguments of vjplint.settings.config.with_overrides."""
        return dict(select=self.select, ignore=self.ignore, extend_select=self.extend_select,
                    extend_ignore=self.extend_ignore, fixable=self.fixable, unfixable=self.unfixable,
                    extend_fixable=self.extend_fixable)


class Workspace:
    def __init__(self, overrides: Overrides = Overrides(), config_file: Optional[str] = None) -> None:
        if config_file is not None:
            if os.path.isdir(config_file):
                raise ConfigError(f"--config {config_file}: is a directory; give the path of a pyproject.toml")
            if not os.path.isfile(config_file):
                raise ConfigError(f"--config {config_file}: no such file")
            config_file = os.path.abspath(config_file)
        self.overrides = overrides
        self.config_file = config_file
        self._file_of_dir: Dict[str, Optional[str]] = {}  # real directory -> its pyproject.toml (or None)
        self._configs: Dict[Optional[str], Config] = {}
        # What the answers depend on besides the linted files: directories searched for a
        # pyproject.toml and the files read (an unchanged-run replay checks their mtimes).
        self.consulted: List[str] = []
        check_codes(overrides.select or (), "--select")
        check_codes(overrides.ignore, "--ignore")
        check_codes(overrides.extend_select, "--extend-select")
        for name in ("extend_ignore", "unfixable", "extend_fixable"):
            check_codes(getattr(overrides, name), "--" + name.replace("_", "-"))
        check_codes(overrides.fixable or (), "--fixable")
        with_overrides(Config(), **overrides.selection())  # their shape, before any file is read

    # -- settings ---------------------------------------------------------------------------
    def settings_for(self, path: str) -> Config:
        """The settings of the file (or directory) at `path`."""
        directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        return self.settings_for_dir(directory)

    def settings_for_dir(self, directory: str, has_pyproject: Optional[bool] = None) -> Config:
        """The settings of the files directly in `directory`. `has_pyproject`, when the caller
        knows it (discovery has just listed the directory), saves a stat."""
        return self._config(self.config_file if self.config_file else self._file_for(directory, has_pyproject))

    def config_files(self) -> List[str]:
        """Every configuration file loaded so far (the explicit one included)."""
        return [path for path in self._configs if path is not None]

    def anchor(self, paths: Sequence[str]) -> Config:
        """The settings of the first path: where the cache lives and what the pre-commit fast path
        remembers."""
        first = paths[0] if paths and paths[0] != "-" else "."
        return self.settings_for(first if os.path.exists(first) else os.getcwd())

    def _file_for(self, directory: str, has_pyproject: Optional[bool] = None) -> Optional[str]:
        real = os.path.realpath(directory)
        if real in self._file_of_dir:
            return self._file_of_dir[real]
        walked = []
        found: Optional[str] = None
        current = real
        while True:
            if current in self._file_of_dir:
                found = self._file_of_dir[current]
                break
            walked.append(current)
            candidate = os.path.join(current, PYPROJECT)
            self.consulted.append(candidate)  # present (its content matters) or absent (so must it stay)
            exists = has_pyproject if (has_pyproject is not None and current == real) else os.path.isfile(candidate)
            if exists and self._has_table(candidate):
                found = candidate
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for directory_ in walked:
            self._file_of_dir[directory_] = found
        return found

    def _has_table(self, candidate: str) -> bool:
        try:
            return read_tool_table(Path(candidate)) is not None
        except ConfigError:
            return True  # the broken file is the one that applies: loading it reports the error

    def _config(self, path: Optional[str]) -> Config:
        config = self._configs.get(path)
        if config is None:
            config = load_config(Path(path)) if path else Config()
            check_config_codes(config)
            o = self.overrides
            config = with_overrides(config, **o.selection())
            if o.exclude is not None or o.extend_exclude:
                config = replace(config, exclude=self._patterns(o.exclude, config) if o.exclude is not None
                                 else config.exclude,
                                 extend_exclude=config.extend_exclude + self._patterns(o.extend_exclude, config))
            if o.cache_dir:
                config = replace(config, cache_dir=o.cache_dir)
            self._configs[path] = config
        return config

    @staticmethod
    def _patterns(patterns: Sequence[str], config: Config) -> Tuple[str, ...]:
        """Command-line exclude patterns as `config` matches them: a pattern naming a path (with a
        `/`) is made relative to the configuration's directory from the working directory."""
        root = config.root or os.getcwd()
        out = []
        for pattern in patterns:
            if "/" in pattern.rstrip("/"):
                absolute = os.path.normpath(os.path.join(os.getcwd(), pattern))
                inside = absolute == root or absolute.startswith(root.rstrip(os.sep) + os.sep)
                pattern = os.path.relpath(absolute, root).replace(os.sep, "/") if inside else absolute
            out.append(pattern.rstrip("/") or pattern)
        return tuple(out)

    # -- files ------------------------------------------------------------------------------
    def files(self, paths: Sequence[str], problems: list, *, force_exclude: bool = False,
              visited: Optional[List[str]] = None) -> List[Tuple[Path, Config]]:
        """The Python files under `paths`, each with its settings (see vjplint.project.discover)."""
        return list(discover(paths, self.settings_for_dir, problems, force_exclude=force_exclude,
                             visited=visited))


def check_codes(selectors: Sequence[str], where: str) -> None:
    """Every selector names at least one rule (the rules are imported only when there are any)."""
    if not selectors:
        return
    from vjplint.rules.registry import unknown_selectors

    unknown = unknown_selectors(selectors)
    if unknown:
        raise ConfigError(f"{where}: unknown rule code or prefix {unknown[0]!r}")


def check_config_codes(config: Config) -> None:
    where = f"{shown(config.source)}: " if config.source else ""
    for key, values in (("select", config.select or ()), ("ignore", config.ignore),
                        ("extend-select", config.extend_select), ("extend-ignore", config.extend_ignore),
                        ("fixable", config.fixable or ()), ("unfixable", config.unfixable),
                        ("extend-fixable", config.extend_fixable)):
        check_codes(values, f"{where}`{key}`")
    for pattern, codes in config.per_file_ignores:
        check_codes(codes, f"{where}`per-file-ignores.{pattern}`")
