"""The server layer: the Language Server over stdio through pytest-lsp (and editors driving it)."""
