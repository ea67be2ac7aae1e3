"""Rankers components."""
