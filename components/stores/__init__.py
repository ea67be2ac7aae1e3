"""Stores components."""
