"""The ``needle`` command-line tool and the application logic behind it (indexing, search, evaluation)."""

import components  # noqa: F401  (registers our modules with Haystack's deserialization allowlist)
