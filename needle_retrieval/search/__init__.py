"""Searching an index directory from Python and the CLI: ``Searcher`` and the hits it answers."""
