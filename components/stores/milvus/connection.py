"""Open a Milvus connection (Milvus Lite for a local ``.db`` path, a server for a URL) with one-line errors.

pymilvus reports a locked Lite database as "Open local milvus failed", an unreachable server as a gRPC
failure and a refused token as an RPC error code. Each becomes a ``MilvusConnectionError`` that names the URI,
what is wrong and the setting (or process) to change, and is raised within ``timeout`` seconds.
"""

import fcntl
import os
from pathlib import Path

from haystack.document_stores.errors import DocumentStoreError
from haystack.utils import Secret
from pymilvus import MilvusClient
from pymilvus.exceptions import MilvusException

from components.stores.milvus.settings import ANALYZERS, MilvusSettings, is_lite

LITE_LOCK_FILE = "LOCK"  # milvus_lite.db.LOCK_FILENAME: Lite holds an flock on it while a process has it open


class MilvusConnectionError(DocumentStoreError):
    """Milvus cannot be reached or refused the connection."""


def open_client(settings: MilvusSettings, token: Secret | None) -> MilvusClient:
    """A client connected to ``settings.uri``; creates a Lite database's parent directory if needed."""
    uri = settings.uri
    if is_lite(uri):
        Path(uri).parent.mkdir(parents=True, exist_ok=True)
    secret = token.resolve_value() if token is not None else None
    try:
        return MilvusClient(uri=uri, token=secret or "", timeout=settings.timeout)
    except MilvusException as error:
        raise MilvusConnectionError(_explain(settings, error)) from error


def _explain(settings: MilvusSettings, error: MilvusException) -> str:
    """The one-line reason a connection failed, with what to change."""
    uri, message = settings.uri, str(getattr(error, "message", error))
    if is_lite(uri) and lite_locked(uri):
        return (
            f"Milvus Lite database {os.path.abspath(uri)} is open in another process (Milvus Lite locks its data "
            f"directory): stop that process, or serve the database with `milvus-lite server --data-dir {uri}` "
            f"and set uri to http://127.0.0.1:PORT"
        )
    lowered = message.lower()
    if any(word in lowered for word in ("auth", "token", "credential", "permission", "password")):
        return f"Milvus at {uri} refused the credentials: set token (MILVUS_TOKEN) to user:password or an API key"
    if is_lite(uri):
        return f"cannot open Milvus Lite database {uri}: {message}"
    return (
        f"cannot reach Milvus at {uri} within {settings.timeout:g} s ({message}): start the server, "
        f"or set uri to a running one"
    )


def lite_locked(uri: str) -> bool:
    """Whether another process holds the lock of the Milvus Lite database at ``uri``."""
    lock = Path(uri) / LITE_LOCK_FILE
    if not lock.exists():
        return False
    with lock.open("rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def analyzer_in_use(client: MilvusClient, settings: MilvusSettings) -> str:
    """
    The BM25 analyzer that runs: the settings' name, and whether it stems.

    Milvus Lite (a local path, or ``milvus-lite server``) tokenizes on ``\\w+``, lowercases and drops stop words
    but ignores the stemmer filter; a Milvus server applies the settings as given.
    """
    name = settings.bm25_analyzer if isinstance(settings.bm25_analyzer, str) else "custom"
    lite = str(client.get_server_version()).startswith("milvus_lite")
    stems = settings.analyzer_params() == ANALYZERS["english"] and not lite
    engine = "Milvus Lite" if lite else "Milvus server"
    return f"{name} on {engine} ({'with' if stems else 'without'} stemming)"
