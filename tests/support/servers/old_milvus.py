"""A Milvus 2.3-style gRPC server for tests: Milvus's real wire protocol, from pymilvus's own generated stubs.

No Milvus older than 2.5 runs here, so this plays one, as far as a client can tell:

- ``Connect`` and ``GetVersion`` answer as a Milvus standalone of ``version`` does (``v2.3.3`` by default:
  ``server_info.build_tags`` and ``version``, ``deploy_mode`` STANDALONE);
- ``CreateIndex`` of a sparse index is refused as Milvus 2.3 refuses it ("create index on 104 field is not
  supported": 104 is SPARSE_FLOAT_VECTOR, which 2.3 does not know), since 2.3 has no BM25 function;
- every other unary call is forwarded, bytes as they are, to ``backend`` (a real ``milvus-lite server``), so
  a dense collection works end to end; without a backend it is UNIMPLEMENTED, as for a server without it.

Like a Milvus server (and unlike grpc's default), it allows keepalive pings on an idle connection every 5 s.
``calls`` records the name of every call received, so a test can tell what a client did.

    python tests/support/servers/old_milvus.py --port 0 [--version v2.3.3] [--backend http://127.0.0.1:19530]

Prints ``READY <uri>`` once it listens.
"""

import argparse
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

import grpc  # type: ignore[import-untyped]  # grpcio ships no type information
from pymilvus.grpc_gen import common_pb2, milvus_pb2

VERSION = "v2.3.3"
SERVICE = "/milvus.proto.milvus.MilvusService/"
STREAMING = ("CreateReplicateStream", "DumpMessages")  # the only non-unary calls; not forwarded
SPARSE_REFUSED = "create index on 104 field is not supported"  # Milvus 2.3's answer, verbatim
DAY_S = 86_400.0
PARAMETER_INVALID = 1100  # Milvus's error code for a bad parameter (merr.ErrParameterInvalid)
# Milvus's proxy: pings at most every 5 s, also on a connection without calls (keepalive.EnforcementPolicy).
PING_POLICY = [("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.min_ping_interval_without_data_ms", 5000)]


class OldMilvus(grpc.GenericRpcHandler):  # type: ignore[misc]
    """The server's handler: its own Connect/GetVersion/CreateIndex, the rest forwarded to ``backend``."""

    def __init__(self, version: str = VERSION, backend: str | None = None) -> None:
        self.version = version
        self.uri = ""  # set once it listens
        self.calls: list[str] = []
        self._lock = threading.Lock()
        self._backend = grpc.insecure_channel(urlparse(backend).netloc) if backend else None
        self._own: dict[str, tuple[Any, Callable[[Any, grpc.ServicerContext], Any]]] = {
            "Connect": (milvus_pb2.ConnectRequest, self.connect),
            "GetVersion": (milvus_pb2.GetVersionRequest, self.get_version),
            "CreateIndex": (milvus_pb2.CreateIndexRequest, self.create_index),
        }

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        """The handler of one call: ours, a forwarder, or None (grpc then answers UNIMPLEMENTED)."""
        method = str(handler_call_details.method)
        name = method.removeprefix(SERVICE)
        with self._lock:
            self.calls.append(name)
        if name in self._own:
            request_type, answer = self._own[name]
            return grpc.unary_unary_rpc_method_handler(
                answer, request_deserializer=request_type.FromString, response_serializer=_serialize
            )
        if self._backend is None or name in STREAMING or not method.startswith(SERVICE):
            return None
        return grpc.unary_unary_rpc_method_handler(self._forwarder(method))

    def connect(self, request: milvus_pb2.ConnectRequest, context: grpc.ServicerContext) -> Any:
        """What Milvus 2.3 answers a client's registration: its build, and an identifier for the client."""
        info = common_pb2.ServerInfo(
            build_tags=self.version, build_time="Fri Nov 10 2023", git_commit="a1b2c3d", go_version="go1.20.7",
            deploy_mode="STANDALONE",
        )  # fmt: skip
        return milvus_pb2.ConnectResponse(status=common_pb2.Status(), server_info=info, identifier=1)

    def get_version(self, request: milvus_pb2.GetVersionRequest, context: grpc.ServicerContext) -> Any:
        return milvus_pb2.GetVersionResponse(status=common_pb2.Status(), version=self.version)

    def create_index(self, request: milvus_pb2.CreateIndexRequest, context: grpc.ServicerContext) -> Any:
        """Refuse a sparse index as 2.3 does; forward any other (or UNIMPLEMENTED without a backend)."""
        params = {pair.key: pair.value for pair in request.extra_params}
        if params.get("index_type", "").startswith("SPARSE"):
            return common_pb2.Status(
                error_code=common_pb2.UnexpectedError, reason=SPARSE_REFUSED, code=PARAMETER_INVALID
            )
        if self._backend is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not implemented!")
        raw = self._forwarder(SERVICE + "CreateIndex")(request.SerializeToString(), context)
        return common_pb2.Status.FromString(raw)

    def _forwarder(self, method: str) -> Callable[[bytes, grpc.ServicerContext], bytes]:
        """A handler passing the request's bytes and metadata to the backend and its answer (or error) back."""
        assert self._backend is not None
        call = self._backend.unary_unary(method)

        def forward(request: bytes, context: grpc.ServicerContext) -> bytes:
            metadata = [
                (key, value)
                for key, value in context.invocation_metadata()
                if not key.startswith(("grpc-", ":")) and key != "user-agent"
            ]
            remaining = context.time_remaining()  # a huge number for a call without a deadline
            try:
                answer: bytes = call(request, metadata=metadata, timeout=remaining if remaining < DAY_S else None)
            except grpc.RpcError as error:
                context.abort(error.code(), str(error.details()))
            return answer

        return forward

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()


def _serialize(message: Any) -> bytes:
    data: bytes = message.SerializeToString()
    return data


def start(version: str = VERSION, backend: str | None = None, port: int = 0) -> tuple[grpc.Server, OldMilvus]:
    """Start a server on 127.0.0.1:``port`` (0: a free one); its handler knows its ``uri``."""
    handler = OldMilvus(version, backend)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=[handler], options=PING_POLICY)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    handler.uri = f"http://127.0.0.1:{bound}"
    return server, handler


@contextmanager
def serving(version: str = VERSION, backend: str | None = None) -> Iterator[OldMilvus]:
    """A server in this process for the block; stopped (and its backend channel closed) after."""
    server, handler = start(version, backend)
    try:
        yield handler
    finally:
        server.stop(grace=0)
        handler.close()


def main() -> None:
    """Parse flags, listen, print ``READY <uri>``, serve until killed."""
    parser = argparse.ArgumentParser(description="A Milvus 2.3-style gRPC server for tests")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--version", default=VERSION, help=f"what GetVersion answers (default {VERSION})")
    parser.add_argument("--backend", help="a real Milvus (e.g. milvus-lite server) the other calls go to")
    config = parser.parse_args()
    server, handler = start(config.version, config.backend, config.port)
    print(f"READY {handler.uri}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
