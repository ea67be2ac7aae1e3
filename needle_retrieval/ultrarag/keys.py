"""Literal secrets in UltraRAG's parameter.yaml (an API key, a Milvus token), taken the one way needle takes keys.

UltraRAG reads a key from its file and falls back to an environment variable. needle never keeps a key in a
component, a pipeline file or an index manifest: a component holds a ``Secret`` naming environment variables. So a
literal key in the file is moved into its variable for this process, with a warning saying so (a variable that
is already set to something else wins, with a warning too), and a later process needs that variable set.
"""

import logging
import os
from typing import Any

logger = logging.getLogger(__name__)


def take_literal(key: str, value: Any, variable: str, what: str = "key") -> bool:
    """Move the literal secret VALUE of the file's KEY into the environment VARIABLE; whether the file gave one.

    An empty value or null gives none (the variable, if set, is used as it is).

    :raises ValueError: VALUE is neither a string nor null (naming KEY).
    """
    if value in (None, ""):
        return False
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string or null, got {type(value).__name__}")
    if os.environ.get(variable, value) != value:
        logger.warning(f"{key}: {variable} is set and wins over the {what} in the file")
        return True
    logger.warning(
        f"{key} is a literal {what}: it is used through {variable} for this run and never written into the index; "
        f"set {variable} and leave {key} empty instead"
    )
    os.environ[variable] = value
    return True
