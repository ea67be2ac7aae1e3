"""YAML someone else wrote (UltraRAG's parameter.yaml, a `needle eval --pipeline` file), read as data in one line.

``load_yaml`` is ``yaml.safe_load`` (no Python object is ever built) with the two ways Python's own limits would
otherwise end a read in a traceback or in a message that names neither file nor key turned into one ``ValueError``
line, or a value the reader's checks refuse by name:

- nesting deeper than the parser's recursion can follow (a parameter file is a few levels deep; 5,000 ``[`` are
  not one) is a ``ValueError`` saying so, instead of a ``RecursionError``;
- an integer of more than the 4,300 decimal digits Python reads from text and prints (a hexadecimal one too)
  becomes a ``components.checks.OverlongInt``, which every range check refuses naming its key and range
  (``top_k must be an integer in [1, 10000], got an integer of 4,301 digits``).
"""

import math
from typing import Any

import yaml
from yaml.nodes import ScalarNode

from components.checks import PRINTABLE_INT_BITS, OverlongInt, parse_decimal

YAML_INT = "tag:yaml.org,2002:int"


class DataLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` whose decimal integers are read by ``components.checks.parse_decimal``."""


def _construct_int(loader: DataLoader, node: ScalarNode) -> int:
    """A YAML 1.1 integer: a plain decimal one through ``parse_decimal``; any other (0x, 0o, 0b, 1:30) as
    SafeLoader reads it (those bases have no digit limit), an ``OverlongInt`` when too long to print in decimal."""
    value = str(node.value).replace("_", "")
    digits = value.lstrip("+-")
    if digits[:1] != "0" and ":" not in digits:
        return parse_decimal(value)
    number: int = loader.construct_yaml_int(node)
    if number.bit_length() > PRINTABLE_INT_BITS:
        return OverlongInt(int(number.bit_length() * math.log10(2)) + 1, number < 0)
    return number


DataLoader.add_constructor(YAML_INT, _construct_int)


def load_yaml(text: str) -> Any:
    """TEXT parsed as YAML data.

    :raises ValueError: one line: the parser's error (where in the text, what it found), or nesting too deep.
    """
    try:
        return yaml.load(text, Loader=DataLoader)  # DataLoader is a SafeLoader: data only
    except yaml.YAMLError as error:
        raise ValueError(" ".join(str(error).split())) from None
    except RecursionError:
        raise ValueError("nested too deeply to read (lists or mappings within each other, hundreds deep)") from None
    except (ValueError, OverflowError) as error:  # a scalar its type cannot hold, e.g. the date 2024-13-01
        raise ValueError(f"a value YAML cannot read: {error}") from None
