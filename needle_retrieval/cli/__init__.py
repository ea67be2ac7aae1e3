"""The `needle` command line: ``needle_retrieval.cli.parser`` (flags and help), ``needle_retrieval.cli.options``
(argparse types) and ``needle_retrieval.cli.commands`` (one function per command, importing its job's modules only when
it runs; ``needle index``'s in ``needle_retrieval.cli.index_command``).

``needle = "needle_retrieval.cli:main"`` in pyproject.toml names this package's ``main``.
"""

from needle_retrieval.cli.commands import main

__all__ = ["main"]
