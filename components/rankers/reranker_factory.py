"""Build a reranker by name, as mxRAG's ``RerankerFactory.create_reranker`` does, but failing loudly.

mxRAG returns None for an unknown type or bad arguments; here an unknown type, a missing required argument or
an unknown argument is a ``ValueError`` that says what is accepted. mxRAG's argument names are understood:
``k`` for ``top_k``, and ``client_param`` as a dict ``{"ca_file": ...}`` (the TLS CA bundle of mxRAG's
``ClientParam``; client certificates are our own ``client_cert`` / ``client_key`` arguments).
"""

import inspect
from typing import Any, TypeAlias

from components.rankers.local_cross_encoder_ranker import LocalCrossEncoderRanker
from components.rankers.mix_retrieve_ranker import MixRetrieveRanker
from components.rankers.tei_ranker import TEIRanker

# MixRetrieveRanker scores tagged Documents rather than texts, so the factory's result is one of the three
# classes, not the text-ranker Protocol `Reranker`.
AnyReranker: TypeAlias = LocalCrossEncoderRanker | TEIRanker | MixRetrieveRanker
RERANKERS: dict[str, type[AnyReranker]] = {
    "local_reranker": LocalCrossEncoderRanker,
    "tei_reranker": TEIRanker,
    "mix_reranker": MixRetrieveRanker,
}
CLIENT_PARAM_KEYS = {"ca_file"}


def _from_mxrag_names(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Map mxRAG's argument names onto ours (``k`` -> ``top_k``, ``client_param`` -> ``ca_file``)."""
    kwargs = dict(kwargs)
    if "k" in kwargs:
        if "top_k" in kwargs:
            raise ValueError("pass either k (mxRAG's name) or top_k, not both")
        kwargs["top_k"] = kwargs.pop("k")
    client_param = kwargs.pop("client_param", None)
    if client_param is not None:
        if not isinstance(client_param, dict) or set(client_param) - CLIENT_PARAM_KEYS:
            raise ValueError(
                f"client_param must be a dict with keys among {sorted(CLIENT_PARAM_KEYS)}, got {client_param!r}"
            )
        kwargs.update(client_param)
    return kwargs


def _check_arguments(name: str, cls: type[AnyReranker], kwargs: dict[str, Any]) -> None:
    """Name any missing required argument or unknown argument, with the accepted ones."""
    params = dict(inspect.signature(cls.__init__).parameters)  # the class itself shows Haystack's (*args, **kwargs)
    params.pop("self")
    accepted = sorted(params)
    missing = [p for p, spec in params.items() if spec.default is inspect.Parameter.empty and p not in kwargs]
    if missing:
        raise ValueError(f"similarity_type={name!r} needs {', '.join(missing)}; accepted arguments: {accepted}")
    unknown = sorted(set(kwargs) - set(params))
    if unknown:
        raise ValueError(f"similarity_type={name!r} does not take {', '.join(unknown)}; accepted arguments: {accepted}")


def create_reranker(similarity_type: str, **kwargs: Any) -> AnyReranker:
    """
    Create a reranker by type name.

    :param similarity_type: ``"local_reranker"`` (LocalCrossEncoderRanker), ``"tei_reranker"`` (TEIRanker) or
        ``"mix_reranker"`` (MixRetrieveRanker).
    :param kwargs: the chosen class's init arguments (mxRAG names ``k`` and ``client_param`` also accepted).
    :raises ValueError: for an unknown type, a missing or unknown argument, or an out-of-range value.
    """
    if similarity_type not in RERANKERS:
        raise ValueError(f"unknown similarity_type {similarity_type!r}; expected one of {sorted(RERANKERS)}")
    cls = RERANKERS[similarity_type]
    kwargs = _from_mxrag_names(kwargs)
    _check_arguments(similarity_type, cls, kwargs)
    return cls(**kwargs)
