"""Converters components."""
