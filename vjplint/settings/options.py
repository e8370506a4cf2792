"""The options of `vjplint [check]`, in one table that both argparse (vjplint.cli.check) and the
pre-commit fast path and replay (vjplint.batch.fastpath) read. No imports: the fast path pays for
every module it loads."""

# Each option: (flags, takes a value, help, traits). Traits:
#   "harmless": changes nothing when there is nothing to report (pre-commit's fast answer may
#               still be given);
#   "no-replay": a command line with it is never replayed from a recorded run.
CHECK_OPTIONS = (
    (("--fix",), False, "apply safe fixes in place", ("no-replay",)),
    (("--unsafe-fixes",), False, "also apply (with --fix) or show unsafe fixes", ()),
    (("--diff",), False, "print fixes as a unified diff; write nothing", ("no-replay",)),
    (("--verify",), False, "with --fix/--diff: prove each rewrite on JAX first", ("no-replay",)),
    (("--show-fixes",), False, "show the fix for each fixable diagnostic", ()),
    (("--select",), True, "rule codes or prefixes to enable (replaces the default set)", ()),
    (("--ignore",), True, "rule codes or prefixes to disable", ()),
    (("--extend-select",), True, "rule codes or prefixes to add", ()),
    (("--extend-ignore",), True, "rule codes or prefixes to disable, added to `ignore` (ruff's deprecated spelling)", ()),
    (("--fixable",), True, "rule codes or prefixes whose fixes are offered (replaces `fixable`; default: ALL)", ()),
    (("--unfixable",), True, "rule codes or prefixes whose fixes are never offered or applied", ()),
    (("--extend-fixable",), True, "rule codes or prefixes to add to `fixable`", ()),
    (("--exclude",), True, "file patterns to skip, replacing `exclude` (a pattern with / is relative to the "
                           "working directory)", ()),
    (("--extend-exclude",), True, "file patterns to skip, added to `exclude`", ()),
    (("--output-format",), True, "output format: text, concise, json, sarif, github, gitlab, junit, rdjson or lsp (default: text)", ()),
    (("--add-noqa",), False, "add `# noqa: CODE` to every line with a finding (a baseline)", ("no-replay",)),
    (("--show-files",), False, "print the files that would be checked, one per line, and exit", ("no-replay",)),
    (("--output-file", "-o"), True, "write the report to FILE instead of stdout", ("no-replay",)),
    (("--watch", "-w"), False, "check again whenever a file changes (needs vjplint[watch])", ("no-replay",)),
    (("--color",), True, "colour the text output: auto (a terminal, unless NO_COLOR; FORCE_COLOR forces it), "
                         "always or never", ()),
    (("--show-settings",), True, "print the settings that apply to PATH, and where they come from", ("no-replay",)),
    (("--stdin-filename",), True, "the name used for stdin input", ("no-replay",)),
    (("--config",), True, "explicit pyproject.toml (applies to every file)", ()),
    (("--exit-zero",), False, "exit 0 even when diagnostics remain", ("harmless",)),
    (("--exit-non-zero-on-fix",), False, "exit 1 when a fix changed something, even if no diagnostics remain", ()),
    (("--force-exclude",), False, "apply exclude settings to files named on the command line too (pre-commit)",
     ("harmless",)),
    (("--statistics",), False, "count diagnostics per rule instead of listing them (text, or a JSON list "
                               "with --output-format json)", ()),
    (("--no-cache",), False, "do not read or write the result cache", ("harmless", "no-replay")),
    (("--cache-dir",), True, "where the result cache lives", ()),
    (("--jobs", "-j"), True, "worker processes (default: from the CPU count)", ()),
    (("-q", "--quiet"), False, "print diagnostics only, no summary", ("harmless",)),
    (("--verbose",), False, "tracebacks for internal errors", ()),
)
OUTPUT_FORMATS = ("text", "concise", "json", "sarif", "github", "gitlab", "junit", "rdjson", "lsp")
SUBCOMMANDS = {
    "check": "lint files and directories (the default)",
    "rule": "print a rule's documentation (vjplint rule CODE, vjplint rule --all)",
    "verify": "prove the available fixes on JAX without writing them",
    "check-grads": "run your custom_vjp/custom_jvp rules on JAX against finite differences",
    "server": "run the Language Server over stdio",
}


def flags(*, value: bool, trait: str = "") -> frozenset:
    """The flags of the options that take a value (or not), optionally only those with `trait`."""
    return frozenset(flag for names, takes_value, _, traits in CHECK_OPTIONS
                     if takes_value == value and (not trait or trait in traits) for flag in names)


COLOR_CHOICES = ("auto", "always", "never")


def colour_wanted(choice: "str | None", environ: dict, isatty: bool) -> bool:
    """Whether text output is coloured: `--color always/never` decides; else (auto) NO_COLOR
    (any non-empty value, no-color.org) turns it off, FORCE_COLOR (non-empty) or CLICOLOR_FORCE
    (set, not 0; bixense.com/clicolors, which ruff honours too) on, and otherwise only a terminal
    that is not TERM=dumb and not CLICOLOR=0 gets it."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR") or environ.get("CLICOLOR_FORCE", "0") not in ("", "0"):
        return True
    return isatty and environ.get("TERM") != "dumb" and environ.get("CLICOLOR") != "0"
