"""Websearch components."""
