"""The fuzz layer: hypothesis / hypothesmith property tests."""
