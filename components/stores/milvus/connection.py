"""Open and close a Milvus connection (Milvus Lite for a local ``.db`` path, a server for a URL), one-line errors.

pymilvus reports a locked Lite database as "Open local milvus failed", an unreachable server as a gRPC
failure and a refused token as an RPC error code. Each becomes a ``MilvusConnectionError`` that names the URI,
what is wrong and the setting (or process) to change, and is raised within ``timeout`` seconds. A server that
goes away after connecting fails the next call the same way (``call_failure``).

On connect the server's version says what it can run (``server_features``): a store whose settings need more
(Milvus's BM25 function for ``bm25=True``) is refused right there, before anything is embedded or written, with
one ``MilvusVersionError`` line naming the server's version and the one needed (a Milvus 2.3 server otherwise
fails only at the first write, with "create index on 104 field is not supported").

For a ``.db`` path pymilvus starts a Milvus Lite server thread in this process (one per path, shared by every
client of that path) and never stops it: ``MilvusClient.close()`` leaves the database locked until the process
exits. ``close_client`` stops it when the last store of this process that opened the path closes.
"""

import fcntl
import logging
import os
import re
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

from haystack.document_stores.errors import DocumentStoreError
from haystack.utils import Secret
from pymilvus import MilvusClient
from pymilvus.exceptions import MilvusException

from components.stores.milvus.settings import MilvusSettings, is_lite

LITE_LOCK_FILE = "LOCK"  # milvus_lite.db.LOCK_FILENAME: Lite holds an flock on it while a process has it open
# pymilvus's loggers print on its own stderr handler. Every failed call is logged with its traceback (decorators,
# at ERROR) and every failed reconnect too (connection_manager, at WARNING), though each failure reaches the user
# as the store's one-line error; every query iterator over Milvus Lite warns that it falls back to a client-side
# timestamp (Lite sends none), which is no failure at all. These levels keep all three off stderr.
NOISY_LOGGERS = {
    "pymilvus.decorators": logging.CRITICAL,
    "pymilvus.client.connection_manager": logging.CRITICAL,
    "pymilvus.client.iterator.query_iterator": logging.ERROR,
}


class MilvusConnectionError(DocumentStoreError):
    """Milvus cannot be reached or refused the connection."""


class MilvusVersionError(DocumentStoreError):
    """The Milvus server is too old for what the store's settings ask of it (e.g. BM25 before Milvus 2.5)."""


_lite_users: dict[str, int] = {}  # absolute Lite path -> stores of this process holding it open
_lite_lock = threading.Lock()


# What the store uses: the Milvus release that brought it (release notes: upsert 2.3.0; multi-vector hybrid
# search and sparse vectors 2.4.0; full text search, i.e. the BM25 function, 2.5.0), what needs it, and the
# setting that does without it. Milvus Lite runs all of them.
DENSE_ONLY = "or set bm25=False (`needle index` without --bm25) for a dense-only collection"
FEATURES: dict[str, tuple[tuple[int, int], str, str]] = {
    "upsert": ((2, 3), "the store (OVERWRITE writes are upserts)", ""),
    "hybrid": ((2, 4), "bm25=True (its rrf search is Milvus's hybrid search)", DENSE_ONLY),
    "bm25": ((2, 5), "bm25=True (Milvus's BM25 function)", DENSE_ONLY),
}
LITE_PREFIX = "milvus_lite"  # what Milvus Lite answers to GetVersion, e.g. "milvus_lite-3.2.2"
_RELEASE = re.compile(r"(\d+)\.(\d+)")


@dataclass(frozen=True)
class ServerFeatures:
    """What the Milvus at the other end runs: its version as it reports it, its engine, and its release.

    ``release`` is (major, minor) read from the version; None when the version names none (a development
    build, a cloud's own name): then every feature is assumed, and the server has the last word.
    """

    version: str
    engine: str  # "lite" (Milvus Lite, in-process or `milvus-lite server`) or "server"
    release: tuple[int, int] | None

    @property
    def lite(self) -> bool:
        return self.engine == "lite"

    def supports(self, feature: str) -> bool:
        """Whether the server runs ``feature`` (a key of FEATURES: upsert, hybrid, bm25)."""
        return self.lite or self.release is None or self.release >= FEATURES[feature][0]


_known: "weakref.WeakKeyDictionary[MilvusClient, ServerFeatures]" = weakref.WeakKeyDictionary()


def server_features(client: MilvusClient, timeout: float | None = None) -> ServerFeatures:
    """The features of ``client``'s server, from its version (asked once per client)."""
    if client not in _known:
        _known[client] = features_of(str(client.get_server_version(timeout=timeout)))
    return _known[client]


def features_of(version: str) -> ServerFeatures:
    """The features a server reporting ``version`` has ("v2.3.3", "2.5.0-rc.1", "milvus_lite-3.2.2", ...)."""
    if version.startswith(LITE_PREFIX):
        return ServerFeatures(version, "lite", None)
    found = _RELEASE.search(version)
    release = (int(found.group(1)), int(found.group(2))) if found else None
    return ServerFeatures(version, "server", release)


def missing_feature(features: ServerFeatures, settings: MilvusSettings) -> str | None:
    """Why the server cannot hold a store of ``settings`` (naming the newest release it would need), or None."""
    wanted = ["upsert", "hybrid", "bm25"] if settings.bm25 else ["upsert"]
    lacking = [name for name in wanted if not features.supports(name)]
    if not lacking:
        return None
    release, needed_by, without = FEATURES[max(lacking, key=lambda name: FEATURES[name][0])]
    fix = "upgrade the server" + (f", {without}" if without else "")
    return f"runs {features.version}, but {needed_by} needs Milvus >= {release[0]}.{release[1]}: {fix}"


def open_client(settings: MilvusSettings, token: Secret | None) -> MilvusClient:
    """
    A client connected to ``settings.uri`` that can run what the settings ask for.

    Creates a Lite database's parent directory if needed.

    :raises MilvusConnectionError: the URI cannot be reached, or refused the token.
    :raises MilvusVersionError: the server lacks a feature the settings need (naming both versions).
    """
    quiet_pymilvus()
    uri = settings.uri
    if not is_lite(uri):
        return _checked(_connect(settings, token), settings)
    Path(uri).parent.mkdir(parents=True, exist_ok=True)
    with _lite_lock:
        client = _connect(settings, token)
        path = os.path.abspath(uri)
        _lite_users[path] = _lite_users.get(path, 0) + 1
    return _checked(client, settings)


def quiet_pymilvus() -> None:
    """Keep pymilvus's logged tracebacks off stderr (see NOISY_LOGGERS); our errors still say what failed."""
    for name, level in NOISY_LOGGERS.items():
        logging.getLogger(name).setLevel(level)


def _checked(client: MilvusClient, settings: MilvusSettings) -> MilvusClient:
    """``client``, or closed and a MilvusVersionError when its server lacks a feature the settings need."""
    try:
        problem = missing_feature(_features(client, settings), settings)
    except BaseException:
        close_client(client, settings)
        raise
    if problem is not None:
        close_client(client, settings)
        raise MilvusVersionError(f"Milvus at {settings.uri} {problem}")
    return client


def _features(client: MilvusClient, settings: MilvusSettings) -> ServerFeatures:
    """The server's features; a failed version call is the connection error it stands for."""
    try:
        return server_features(client, settings.timeout)
    except MilvusException as error:
        raise MilvusConnectionError(_explain(settings, error)) from error


def _connect(settings: MilvusSettings, token: Secret | None) -> MilvusClient:
    """
    A dedicated client of ``settings.uri`` (``close`` really closes it).

    Upstream (pymilvus 3.0 + milvus-lite 3.2): pymilvus pings every 10 s even with no call in flight, and Milvus
    Lite's gRPC server (in-process or ``milvus-lite server``) keeps grpc's default ping policy (a ping on an idle
    connection is abuse), so an idle client is sent away with GOAWAY "too_many_pings" after a minute or so, and
    grpc and pymilvus log it. So Lite is connected without idle pings (a local database at once, a server URL once
    its version says it is Lite); a Milvus server keeps pymilvus's defaults. pymilvus also shares one connection per
    address and keeps it open (and pinging) after ``close``: ``dedicated`` gives each client its own. And grpc
    shares one subchannel per address and settings, so the new channel pymilvus opens to recover from a restarted
    server would inherit the old one's reconnect back-off and fail at once: each client gets its own pool.
    """
    uri = settings.uri
    client = _client(settings, token, idle_pings=not is_lite(uri))
    if is_lite(uri):
        return client
    try:
        features = _features(client, settings)
    except BaseException:
        client.close()
        raise
    if not features.lite:
        return client
    client.close()
    client = _client(settings, token, idle_pings=False)
    _known[client] = features
    return client


def _client(settings: MilvusSettings, token: Secret | None, idle_pings: bool) -> MilvusClient:
    """A new dedicated client; a client that was sent away anyway (GOAWAY) is retried once."""
    secret = token.resolve_value() if token is not None else None
    options: dict[str, object] = {"grpc.use_local_subchannel_pool": 1}
    if not idle_pings:
        options["grpc.keepalive_permit_without_calls"] = False
    for attempt in (1, 2):
        try:
            return MilvusClient(
                uri=settings.uri, token=secret or "", timeout=settings.timeout, dedicated=True, grpc_options=options
            )
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
    The BM25 analyzer that runs: the settings' name, and whether it stems; "none" for a store without BM25.

    Milvus Lite (a local path, or ``milvus-lite server``) tokenizes on ``\\w+``, lowercases and drops stop words
    but ignores the stemmer filter; a Milvus server applies the settings as given. A store whose server has no
    BM25 function never opens (``open_client``), so no analyzer is claimed for one.
    """
    if not settings.bm25:
        return "none (bm25=False)"
    name = settings.bm25_analyzer if isinstance(settings.bm25_analyzer, str) else "custom"
    lite = is_lite_engine(client)
    stems = settings.stems() and not lite
    engine = "Milvus Lite" if lite else "Milvus server"
    return f"{name} on {engine} ({'with' if stems else 'without'} stemming)"


def is_lite_engine(client: MilvusClient) -> bool:
    """Whether Milvus Lite answers (a local path, or ``milvus-lite server``), not a Milvus server or cluster."""
    return server_features(client).lite
