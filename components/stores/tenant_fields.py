"""The names a tenant field may take (``meta.tenant``), checked without importing anything heavy.

The `needle` argument parser (``--tenant-field``, ``--tenant``) and the index manifest check their values here, before
Haystack or a store loads; ``components.stores.tenants`` recognises filters on such a field.
"""

import re

FIELD = re.compile(r"meta(\.[A-Za-z0-9_\-]+)+")
"""The meta fields a tenant filter may name (``meta.tenant``, ``meta.org.tenant``): dotted keys of plain characters."""
MAX_TENANT = 1024
"""The longest tenant value `needle search --tenant` takes, in characters."""


def tenant_field_problem(field: object) -> str | None:
    """Why FIELD cannot be a tenant field, or None: it must be ``meta.`` and dotted keys of letters, digits, ``_``
    and ``-`` (e.g. ``meta.tenant``)."""
    if isinstance(field, str) and FIELD.fullmatch(field):
        return None
    return f"a tenant field is meta.KEY (letters, digits, _ and -; e.g. meta.tenant), got {field!r:.80}"


def looks_like_date(value: str) -> bool:
    """Whether Haystack's filters may compare VALUE as an ISO date (a ``YYYY-?MM-?DD`` prefix, a superset of what
    they parse): ``==`` then holds for another spelling of the same instant (``2024-01-01`` and
    ``2024-01-01T00:00:00``), not only for the same string."""
    return len(value) >= 10 and value[:4].isdigit() and value[4] == "-" and value[7] == "-"


def tenant_value_problem(value: object) -> str | None:
    """Why VALUE cannot be a tenant (`needle search --tenant`, ``Searcher(tenant=)``), or None: a string of 1 to
    ``MAX_TENANT`` characters, not only blanks, no control character, not date-like (``looks_like_date``: Haystack
    would match the documents of every other spelling of that instant too)."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TENANT:
        return f"a tenant is a non-blank string of at most {MAX_TENANT} characters, got {value!r:.80}"
    if any(ord(character) < 32 or ord(character) == 127 for character in value):
        return f"a tenant holds no control character, got {value!r:.80}"
    if looks_like_date(value):
        return (
            f"a tenant may not start like a date (YYYY-MM-DD): Haystack's filters compare such values as instants, "
            f"so other tenants' spellings of the same instant would match too, got {value!r:.80}"
        )
    return None
