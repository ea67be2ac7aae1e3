"""The Milvus part of an index generation: where its collection lives, how it is built, and how it is retired.

Two places, one layout of generations (see ``needle_retrieval.index.generations``):

- **Milvus Lite** (the default): each generation holds its own database, ``DIR/gen-NNNNNN/milvus.db``, with one
  collection. A rebuild writes a whole new database beside the live one and goes live with the generation's
  atomic switch; the manifest records the database relative to its generation, so the index can be moved.
- **A Milvus server** (``--uri http://host:port``): each generation gets its own collection,
  ``<NAME>_genNNNNNN``. Once the generation is live, the alias ``<NAME>`` points at it (for other Milvus
  clients); the collection of every generation the keep-one cleanup removes is dropped, and a failed build
  drops the collection it started. The index's own pipelines name the concrete collection, never the alias.

Milvus Lite runs in-process and locks its data directory; the store frees it when its last user in this process
closes, so the CLI closes every store it opened.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from haystack import Pipeline
from haystack.document_stores.errors import DocumentStoreError
from haystack.utils import Secret

from needle_retrieval.defaults import DEFAULT_CHUNK_SIZE
from needle_retrieval.errors import NeedleError
from needle_retrieval.index.milvus_place import ANALYZERS, LITE_DB, MilvusPlace, is_server, store_params
from needle_retrieval.index.options import DEFAULT_OPTIONS, IndexOptions
from needle_retrieval.index.parts import carry_embeddings, embeddings_refused
from needle_retrieval.index.streaming import run_chunked
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.embedders import Recorded, set_document_embedder

if TYPE_CHECKING:
    from components.stores.milvus.document_store import MilvusDocumentStore


class MilvusServerError(DocumentStoreError):
    """A call to a Milvus server failed (creating an alias, dropping a retired collection)."""


def check_milvus_options(uri: str | None, collection: str | None, lang: str, dense: bool) -> None:
    """Refuse CLI options a Milvus index cannot take, naming the flag and what it allows."""
    if uri is not None and not is_server(uri):
        raise NeedleError(
            f"--uri {uri!r}: give a Milvus server as http://host:port, or leave --uri out to keep a Milvus Lite "
            f"database inside the index (DIR/gen-NNNNNN/{LITE_DB}: moved and rebuilt with it)"
        )
    if lang not in ANALYZERS:
        raise NeedleError(
            f"--lang {lang} is not available with --store milvus (Milvus has no analyzer for it): choose one of "
            f"{', '.join(ANALYZERS)}"
        )
    if not dense:
        raise NeedleError("--no-dense is not available with --store milvus: its collection holds the embeddings")
    if collection is not None:
        from components.stores.milvus.settings import MilvusSettings

        try:
            MilvusSettings(collection_name=collection)
        except ValueError as error:
            raise NeedleError(f"--collection: {error}") from None


def build_milvus(
    corpus: Path,
    generation: Path,
    place: MilvusPlace,
    *,
    model: str,
    overwrite: bool,
    bm25: bool,
    lang: str,
    reuse: Path | None,
    embedder: Recorded = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    options: IndexOptions = DEFAULT_OPTIONS,
) -> tuple[int, int]:
    """
    Run pipelines/milvus_index.yaml into GENERATION's collection, once per CHUNK_SIZE documents
    (``needle_retrieval.index.streaming``); returns (documents written, dimension).

    A server is first asked whether it can hold the collection (``check_server``), and the store connects before
    anything is embedded. The embeddings go to GENERATION/embeddings.npy and are carried over from ``reuse`` as for
    FAISS. The store is flushed after the bulk load, then closed (and a Lite database released, so the generation
    can be renamed).
    ``options``: the reader's duplicate-id rule and the collection's own settings (``needle_retrieval.index.options``).
    """
    if place.server:
        check_server(place.uri, bm25)
    npy = carry_embeddings(generation, reuse, overwrite)
    data = pf.load_template("milvus_index")
    set_document_embedder(data, model, str(npy), overwrite, embedder)  # embedder: the backend, as for FAISS
    uri = place.uri_under(generation.resolve())
    for key, value in store_params(uri, place.collection, bm25, lang).items():
        pf.set_init_param(data, f"writer.document_store.{key}", value)
    options.apply(data, writes_dense=True)
    pipeline = pf.build(data)
    store = cast("MilvusDocumentStore", pipeline.get_component("writer").document_store)  # type: ignore[attr-defined]
    try:
        store.warm_up()  # connect (a locked Lite database fails here) before the first chunk is embedded
        with embeddings_refused():
            written = run_chunked(pipeline, corpus, chunk_size, "Indexing (Milvus)")
        store.flush()
        if store.dim is None:
            raise NeedleError(f"corpus {corpus} holds no documents: nothing to index")
        return written, store.dim
    finally:
        store.close()  # the last close of a Lite database in this process frees its lock


def close_stores(pipeline: Pipeline) -> None:
    """Close every Milvus store of PIPELINE (the last close of a Lite database frees its lock)."""
    from components.stores.milvus.document_store import MilvusDocumentStore

    for _, component in pipeline.walk():
        store = getattr(component, "document_store", None)
        if isinstance(store, MilvusDocumentStore):
            store.close()


def check_server(uri: str, bm25: bool) -> None:
    """Refuse a server that cannot hold the collection (BM25 before Milvus 2.5: the error names both versions).

    ``build_milvus`` asks before it builds the pipeline, which loads the embedding model: a server without BM25
    (Milvus 2.3 answers "create index on 104 field is not supported" to the first write) fails in seconds.
    """
    with server_client(uri, bm25=bm25):
        pass


@contextmanager
def server_client(uri: str, bm25: bool = False) -> Iterator[Any]:
    """A client of the Milvus server at ``uri`` (token from MILVUS_TOKEN), closed afterwards.

    ``open_client`` refuses a server without what a collection with(out) BM25 needs; managing collections and
    aliases needs no BM25.
    """
    from pymilvus.exceptions import MilvusException

    from components.stores.milvus.connection import open_client
    from components.stores.milvus.settings import MilvusSettings

    client = open_client(MilvusSettings(uri=uri, bm25=bm25), Secret.from_env_var("MILVUS_TOKEN", strict=False))
    try:
        yield client
    except MilvusException as error:
        message = " ".join(str(getattr(error, "message", "") or error).split())
        raise MilvusServerError(f"Milvus at {uri}: {message}") from error
    finally:
        client.close()


def check_new_collection(place: MilvusPlace) -> None:
    """Refuse to build a generation into a server collection that exists already (another index's)."""
    with server_client(place.uri) as client:
        if client.has_collection(place.collection):
            raise NeedleError(
                f"Milvus collection {place.collection!r} at {place.uri} already exists but no generation of this "
                f"index built it: another index uses this name; choose another --collection"
            )


def drop_collections(uri: str, collections: list[str]) -> None:
    """Drop these collections from the server at ``uri`` (missing ones are fine)."""
    if not collections:
        return
    with server_client(uri) as client:
        for name in collections:
            if client.has_collection(name):
                client.drop_collection(name)


def point_alias(uri: str, alias: str, collection: str) -> None:
    """Make the alias ``alias`` name ``collection`` on the server at ``uri`` (create it, or move it there)."""
    with server_client(uri) as client:
        if _alias_exists(client, alias):
            client.alter_alias(collection, alias)
        elif client.has_collection(alias):
            raise NeedleError(
                f"cannot point the alias {alias!r} at {collection!r} on {uri}: a collection of that name exists; "
                f"the index is built and live, but other Milvus clients reach it only as {collection!r}"
            )
        else:
            client.create_alias(collection, alias)


def _alias_exists(client: Any, alias: str) -> bool:
    """Whether ``alias`` is an alias on the server (describe_alias raises when it is not; pymilvus's traceback
    of that failed call is kept off stderr by ``open_client``)."""
    from pymilvus.exceptions import MilvusException

    try:
        client.describe_alias(alias)
    except MilvusException:
        return False
    return True
