"""Open and close a Milvus connection (Milvus Lite for a local ``.db`` path, a server for a URL), one-line errors.

pymilvus reports a locked Lite database as "Open local milvus failed", an unreachable server as a gRPC
failure and a refused token as an RPC error code. Each becomes a ``MilvusConnectionError`` that names the URI,
what is wrong and the setting (or process) to change, and is raised within ``timeout`` seconds. A server that
goes away after connecting fails the next call the same way (``call_failure``).

For a ``.db`` path pymilvus starts a Milvus Lite server thread in this process (one per path, shared by every
client of that path) and never stops it: ``MilvusClient.close()`` leaves the database locked until the process
exits. ``close_client`` stops it when the last store of this process that opened the path closes.
"""

import fcntl
import os
import threading
from pathlib import Path

from haystack.document_stores.errors import DocumentStoreError
from haystack.utils import Secret
from pymilvus import MilvusClient
from pymilvus.exceptions import MilvusException

from components.stores.milvus.settings import ANALYZERS, MilvusSettings, is_lite

LITE_LOCK_FILE = "LOCK"  # milvus_lite.db.LOCK_FILENAME: Lite holds an flock on it while a process has it open


class MilvusConnectionError(DocumentStoreError):
    """Milvus cannot be reached or refused the connection."""


_lite_users: dict[str, int] = {}  # absolute Lite path -> stores of this process holding it open
_lite_lock = threading.Lock()


def open_client(settings: MilvusSettings, token: Secret | None) -> MilvusClient:
    """A client connected to ``settings.uri``; creates a Lite database's parent directory if needed."""
    uri = settings.uri
    if not is_lite(uri):
        return _connect(settings, token)
    Path(uri).parent.mkdir(parents=True, exist_ok=True)
    with _lite_lock:
        client = _connect(settings, token)
        path = os.path.abspath(uri)
        _lite_users[path] = _lite_users.get(path, 0) + 1
        return client


def _connect(settings: MilvusSettings, token: Secret | None) -> MilvusClient:
    secret = token.resolve_value() if token is not None else None
    # Upstream (pymilvus 3.0 + milvus-lite 3.2): pymilvus pings every 10 s even with no call in flight, and
    # Milvus Lite's gRPC server keeps grpc's default ping policy (at most one ping per 5 minutes without data),
    # so after ~30 s idle it sends GOAWAY "too_many_pings". No idle pings to a local database; a client that
    # was sent away anyway (e.g. by `milvus-lite server`) is retried once.
    options = {"grpc_options": {"grpc.keepalive_permit_without_calls": False}} if is_lite(settings.uri) else {}
    for attempt in (1, 2):
        try:
            return MilvusClient(uri=settings.uri, token=secret or "", timeout=settings.timeout, **options)
        except MilvusException as error:
            if attempt == 1 and sent_away(error):
                continue
            raise MilvusConnectionError(_explain(settings, error)) from error
    raise AssertionError("unreachable")  # pragma: no cover


def sent_away(error: BaseException) -> bool:
    """Whether gRPC failed because the server closed an idle connection (GOAWAY too_many_pings): retry it."""
    return "too many pings" in _chain_text(error) or "too_many_pings" in _chain_text(error)


def _chain_text(error: BaseException) -> str:
    """The lower-cased text of ``error`` and the errors it was raised from (pymilvus hides gRPC's status there)."""
    parts: list[str] = []
    seen: BaseException | None = error
    while seen is not None and len(parts) < 6:
        parts.append(str(seen))
        code = getattr(seen, "code", None)
        if callable(code):  # a grpc.RpcError: its status code is not part of str() for every error kind
            parts.append(str(code()))
        seen = seen.__cause__ or seen.__context__
    return " ".join(parts).lower()


def close_client(client: MilvusClient, settings: MilvusSettings) -> None:
    """Close ``client``; for Milvus Lite, release the database (its lock) once no store of this process uses it."""
    client.close()
    if not is_lite(settings.uri):
        return
    path = os.path.abspath(settings.uri)
    with _lite_lock:
        left = _lite_users.get(path, 1) - 1
        if left > 0:
            _lite_users[path] = left
            return
        _lite_users.pop(path, None)
        # Upstream (pymilvus 3.0 + milvus-lite 3.2): only milvus-lite's atexit hook stops the per-path server
        # that pymilvus starts for a .db URI; stop it here so that another process can open the database.
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(path)


def call_failure(settings: MilvusSettings, error: MilvusException) -> MilvusConnectionError | None:
    """A one-line connection error for a call that failed because Milvus went away or timed out, else None."""
    message = _message(error)
    lowered = message.lower()
    if error.code == 2 or any(word in lowered for word in ("fail connecting", "unavailable", "deadline")):
        return MilvusConnectionError(
            f"lost the connection to Milvus at {settings.uri} ({message}): start the server again, or set uri "
            f"to a running one (timeout={settings.timeout:g} s bounds each call)"
        )
    return None


def _message(error: MilvusException) -> str:
    """pymilvus's message on one line."""
    return " ".join(str(getattr(error, "message", "") or error).split())


def _explain(settings: MilvusSettings, error: MilvusException) -> str:
    """The one-line reason a connection failed, with what to change."""
    uri, message = settings.uri, _message(error)
    if is_lite(uri) and os.path.abspath(uri) not in _lite_users and lite_locked(uri):
        return (
            f"Milvus Lite database {os.path.abspath(uri)} is open in another process (Milvus Lite locks its data "
            f"directory): stop that process, or serve the database with `milvus-lite server --data-dir {uri}` "
            f"and set uri to http://127.0.0.1:PORT"
        )
    # pymilvus reports a refused token as "Fail connecting ...": the gRPC status (UNAUTHENTICATED, as Milvus's
    # auth interceptor answers) is only in the errors it was raised from.
    lowered = _chain_text(error)
    if any(word in lowered for word in ("auth", "credential", "permission", "password")):
        return f"Milvus at {uri} refused the credentials: set token (MILVUS_TOKEN) to user:password or an API key"
    if is_lite(uri):
        return f"cannot open Milvus Lite database {uri}: {message}"
    if "unimplemented" in lowered:
        return (
            f"{uri} answers but is not a Milvus gRPC endpoint ({message}): set uri to the Milvus port "
            f"(19530 by default), or check the proxy in between"
        )
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
    lite = is_lite_engine(client)
    stems = settings.analyzer_params() == ANALYZERS["english"] and not lite
    engine = "Milvus Lite" if lite else "Milvus server"
    return f"{name} on {engine} ({'with' if stems else 'without'} stemming)"


def is_lite_engine(client: MilvusClient) -> bool:
    """Whether Milvus Lite answers (a local path, or ``milvus-lite server``), not a Milvus server or cluster."""
    return str(client.get_server_version()).startswith("milvus_lite")
