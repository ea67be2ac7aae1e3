"""How a block of options read from an UltraRAG parameter file is checked: each key known, each value of its type.

A file is data: an unknown key, or a value of the wrong YAML type (a quoted "false", a list where a mapping
belongs), is a ValueError naming its key path and what is allowed, never a setting taken another way. The
tables that say which keys each block takes live beside their readers (``embedder_spec``, ``stores``,
``websearch``, ``backends``); ranges and allowed words are the components' own checks.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OptionType:
    """What one option's value must be, as YAML 1.2 types it: ``description`` for the error, ``accepts`` the test.

    Strict, so a quoted "false" (a string, truthy in Python) or a 1 for true is an error naming the key instead
    of a setting silently taken the wrong way; ranges and allowed words are the components' own checks.
    """

    description: str
    accepts: Callable[[Any], bool]


def _is_int(value: Any) -> bool:
    """Whether VALUE is an integer (a bool is not one, though Python says so)."""
    return isinstance(value, int) and not isinstance(value, bool)


BOOL = OptionType("true or false", lambda value: isinstance(value, bool))
INT = OptionType("an integer", _is_int)
STRING = OptionType("a string", lambda value: isinstance(value, str))
OPTIONAL_BOOL = OptionType("true, false or null", lambda value: value is None or isinstance(value, bool))
OPTIONAL_INT = OptionType("an integer or null", lambda value: value is None or _is_int(value))
OPTIONAL_STRING = OptionType("a string or null", lambda value: value is None or isinstance(value, str))
OPTIONAL_NAME = OptionType(
    "a non-empty string or null", lambda value: value is None or (isinstance(value, str) and value != "")
)
OPTIONAL_MAPPING = OptionType("a mapping of options or null", lambda value: value is None or isinstance(value, Mapping))


def check_options(where: str, given: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    """Refuse the keys of GIVEN that are not in ALLOWED, naming every one (sorted as text, whatever its YAML type:
    `1:` and `zzz:` together), WHERE they were and what is allowed."""
    if not isinstance(given, Mapping):
        raise ValueError(f"{where} must be a mapping of options, got {given!r}")
    unknown = sorted({str(key) for key in given if key not in allowed})
    if len(unknown) == 1:
        raise ValueError(f"{where}: option {unknown[0]} is not supported; allowed: {', '.join(allowed)}")
    if unknown:
        raise ValueError(f"{where}: options {', '.join(unknown)} are not supported; allowed: {', '.join(allowed)}")


def options_block(where: str, value: Any) -> dict[str, Any]:
    """VALUE, a block of options at WHERE, as a dict: a mapping, or null (no options); anything else (a `false`,
    a list, a string) is a ValueError naming WHERE, never taken as "no options"."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a mapping of options or null, got {value!r}")
    return dict(value)


def check_types(where: str, given: Mapping[str, Any], types: Mapping[str, OptionType]) -> None:
    """Refuse a value of GIVEN that is not of the type TYPES gives its key, naming WHERE.KEY and the value."""
    for key, kind in types.items():
        if key in given and not kind.accepts(given[key]):
            raise ValueError(f"{where}.{key} must be {kind.description}, got {given[key]!r}")
