"""The server layer: the Language Server over stdio through pytest-lsp (and editors driving it)."""

# The server's tests wait for events (an answer, a notification, a process's end), never for a
# time a busy machine can miss (issue 48: a test that passed alone in 28.6 s failed at load 5-15
# on a 20 s limit). This bound only ends a test whose server hangs.
HANG_GUARD_S = 300.0
