"""Source text to trees: decoding, parsing, positions, the regions worth parsing, notebooks, trigger names.

May import: settings and the top-level leaf modules.
"""
