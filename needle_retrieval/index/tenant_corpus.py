"""`needle index --tenant-field meta.KEY`: refuse a corpus in which no line holds KEY, before anything is built.

A misspelt field (``meta.tennant``) would otherwise build a whole index whose every document is no one's tenant, and
every `needle search --tenant T` on it would answer nothing, with no word of why. The corpus reader puts every key of
a line other than its id and text into ``meta`` unchanged, so ``meta.a.b`` is the line's ``"a"`` object's ``"b"``.
The lines are read in order up to the first that holds the field: one line for a corpus that has it throughout, a
pass over the file only for one that the build is refused for.
"""

from pathlib import Path
from typing import Any

from components.converters.jsonl_lines import CorpusFormatError, iter_json_objects
from needle_retrieval.errors import NeedleError


def check_tenant_field(corpus: Path, field: str) -> None:
    """Refuse CORPUS when none of its lines holds FIELD (``meta.KEY``, already checked by ``tenant_field_problem``).

    :raises NeedleError: no line holds it (one line naming the field and the corpus). A malformed line is left to
        the build, which names it as it always does.
    """
    keys = field.split(".")[1:]
    try:
        if any(_holds(line, keys) for _, line in iter_json_objects(corpus)):
            return
    except CorpusFormatError:
        return  # the build reports the line
    raise NeedleError(
        f"--tenant-field {field}: no line of {corpus} has the key {'.'.join(keys)!r}; every document would be no "
        "one's tenant (check the field's spelling)"
    )


def _holds(line: Any, keys: list[str]) -> bool:
    """Whether LINE (a parsed corpus line) holds the nested KEYS."""
    value = line
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return False
        value = value[key]
    return True
