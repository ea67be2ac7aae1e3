"""Retrievers components."""
