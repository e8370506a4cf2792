"""One module per rule; see registry.py."""
