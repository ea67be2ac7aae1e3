"""The embedding backend of an index: which embedders its index and search pipelines use.

An index manifest records its backend as ``embedder: {"backend", "settings"}`` (see
``needle_retrieval.ultrarag.embedder_spec.EmbedderSpec.recorded`` and ``manifest_record``: no secret, only the names
of the environment variables that hold a key; no program, Infinity's venv is the user's). Manifests without it,
and builds that name none, use the templates' own sentence-transformers embedders with the manifest's ``model``,
as before.

The templates in ``pipelines/`` keep their sentence-transformers ``embedder`` entry; these functions replace that
entry with the recorded backend's document or query embedder, so one template serves every backend.
"""

from typing import Any

from needle_retrieval.errors import NeedleError
from needle_retrieval.pipelines import files as pf
from needle_retrieval.ultrarag.embedder_spec import EmbedderSpec

DEFAULT_BACKEND = "sentence_transformers"
Recorded = dict[str, Any] | None  # an index manifest's `embedder` field


def spec_of(recorded: Recorded, local: bool = False) -> EmbedderSpec | None:
    """The backend a manifest recorded (None: the templates' sentence-transformers embedders).

    :param local: RECORDED is this build's own, from the user's config: it may name a program of this machine
        (Infinity's venv); one read from an index may not (``EmbedderSpec.from_recorded``).
    :raises NeedleError: The record is not one a build writes (naming what is wrong).
    """
    if recorded is None:
        return None
    try:
        return EmbedderSpec.from_recorded(recorded, local=local)
    except ValueError as error:
        raise NeedleError(f"embedder: {error}") from None


def backend_name(recorded: Recorded) -> str:
    """The backend's name, `sentence_transformers` for manifests that record none."""
    return DEFAULT_BACKEND if recorded is None else str(recorded.get("backend"))


def set_document_embedder(
    data: dict[str, Any], model: str, embedding_path: str, overwrite: bool, recorded: Recorded
) -> None:
    """Point an index template's ``embedder`` at MODEL (or the RECORDED backend, this build's own: with the user's
    Infinity venv if they chose one), keeping vectors in EMBEDDING_PATH."""
    spec = spec_of(recorded, local=True)
    if spec is None:
        pf.set_init_param(data, "embedder.model", model)
        pf.set_init_param(data, "embedder.embedding_path", embedding_path)
        pf.set_init_param(data, "embedder.overwrite", overwrite)
        return
    data["components"]["embedder"] = spec.document_embedder(embedding_path, overwrite)


def set_query_embedder(data: dict[str, Any], model: str | None, recorded: Recorded, batch: bool) -> None:
    """Point a search template's ``embedder`` at MODEL (or the RECORDED backend's query embedder).

    A batch template (BATCH: its embedder takes ``texts``) gets the backend's batch query embedder, which names no
    program to run (``EmbedderSpec.query_embedder``): the pipeline may be kept in an index. RECORDED is a manifest's
    (checked by ``IndexManifest.check``, which refuses one naming a program) or this build's own.
    """
    spec = spec_of(recorded, local=True)
    if spec is None:
        pf.set_init_param(data, "embedder.model", model)
        return
    data["components"]["embedder"] = spec.query_embedder(batch=batch)
