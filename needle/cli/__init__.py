"""The `needle` command line: ``needle.cli.parser`` (flags and help), ``needle.cli.options`` (argparse types) and
``needle.cli.commands`` (one function per command, importing its job's modules only when it runs).

``needle = "needle.cli:main"`` in pyproject.toml names this package's ``main``.
"""

from needle.cli.commands import main

__all__ = ["main"]
