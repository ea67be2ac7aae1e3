"""Typed values of UltraRAG's parameter file: strings, integers, booleans and paths as YAML 1.2 types them, and
`gpu_ids` as the GPUs this machine has.

Each reader refuses a value of the wrong type with the key's name (a quoted "false" is not a boolean, a quoted
number not an integer). Paths are resolved as UltraRAG resolves them: a relative path against the current working
directory (``base``, taken once per load), `~` expanded, an absolute path as given.
"""

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def gpu_list(value: Any, backend: str) -> list[int] | None:
    """The seed's `gpu_ids` ("0,1", 1, [0, 1], "" or null) as a list of the GPUs this machine has; only
    sentence_transformers takes it."""
    if value in (None, ""):
        return None
    parts = value if isinstance(value, list) else str(value).split(",")
    try:
        ids = [int(str(part).strip()) for part in parts]
    except ValueError:
        raise ValueError(f'gpu_ids must list GPU numbers such as "0,1", got {value!r}') from None
    if backend == "infinity":
        logger.warning("gpu_ids: the infinity backend chooses its device by backend_configs.infinity.device")
        return None
    if backend != "sentence_transformers":  # bm25 and a remote (openai) backend run no model here: no device
        return None
    return available_gpus(ids)


def available_gpus(ids: list[int]) -> list[int] | None:
    """The GPUs of IDS that torch sees; one warning when some are missing, and None (no GPU named: the CPU when
    there is none) when all are, as UltraRAG's retriever falls back to the CPU."""
    import torch

    count = torch.cuda.device_count()
    present = [i for i in ids if 0 <= i < count]
    if len(present) == len(ids):
        return ids
    missing = ", ".join(str(i) for i in ids if i not in present)
    instead = f"GPU {', '.join(map(str, present))}" if present else "the CPU" if count == 0 else "the default device"
    logger.warning(f"gpu_ids: GPU {missing} is not available on this machine ({count} CUDA devices); using {instead}")
    return present or None


def path_value(base: Path, data: Mapping[str, Any], key: str, shown: str | None = None) -> Path | None:
    """DATA's KEY (a path; SHOWN names it in errors, default KEY) resolved against BASE, the working directory;
    None when absent or empty."""
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{shown or key} must be a path (a string), got {value!r}")
    return resolved(base, value)


def resolved(base: Path, value: str | None) -> Path | None:
    """VALUE, a path already checked to be a string, `~` expanded and resolved against BASE (the working directory;
    an absolute VALUE stays as it is); None when absent or empty."""
    return base / Path(value).expanduser() if value else None


def string_value(data: dict[str, Any], key: str, default: str) -> str:
    """DATA's string KEY; DEFAULT when absent or null."""
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, got {value!r}")
    return value


def optional_string(data: dict[str, Any], key: str) -> str | None:
    """DATA's KEY: a string, or None when absent or null."""
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} must be a string or null, got {value!r}")
    return value


def int_value(data: dict[str, Any], key: str, default: int, high: int | None = None) -> int:
    """DATA's integer KEY (DEFAULT when absent), in [1, HIGH]; a bool or a quoted number is refused."""
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (high is not None and value > high):
        bound = f"an integer in [1, {high}]" if high is not None else "an integer >= 1"
        raise ValueError(f"{key} must be {bound}, got {value!r}")
    return value


def bool_value(data: dict[str, Any], key: str) -> bool:
    """DATA's boolean KEY (false when absent): YAML's true or false only, so a quoted "false" is an error, not
    a truthy string."""
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return value


def unknown_keys(where: str, given: Mapping[Any, Any], allowed: tuple[str, ...]) -> list[str]:
    """The keys of GIVEN (a block at WHERE) that are not in ALLOWED, as WHERE.KEY, sorted as text whatever their
    YAML type: what a block UltraRAG never reads may carry, which the caller names in one warning."""
    return [f"{where}.{key}" for key in sorted({str(key) for key in given if key not in allowed})]
