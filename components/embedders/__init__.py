"""Embedders components."""
