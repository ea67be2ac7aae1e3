"""A cap on the request line and headers `needle serve` reads: ``MAX_HEAD_BYTES`` (64 KiB), past which it answers 431
and closes the connection while the rest of the head is still arriving.

uvicorn's HTTP/1.1 parser (httptools, which it picks whenever httptools is installed) has no such limit: a header of
96 MiB was read whole and parsed on the event loop for 28 s, and a second client's ``/status`` waited 9.8 s. Only
uvicorn's h11 parser has a limit (``h11_max_incomplete_event_size``), which it answers with a bare 400, and it is
several times slower. So this is uvicorn's httptools protocol with a count of the bytes received while a request's
head is incomplete: once they pass the limit, the answer is a 431 and nothing more is read, so at most one read
(256 KiB) past the limit is parsed. A head that completes within one read is measured once parsed (its target and
header lines), so it is refused too when it is over the limit; a body or a pipelined request in the same read is
never counted against it.
"""

import json

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD_BYTES = 64 * 1024
HEAD_TOO_LARGE = f"request line and headers are larger than the limit of {MAX_HEAD_BYTES:,} bytes"


class HeadLimitProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, answering 431 to a request whose head passes ``MAX_HEAD_BYTES``."""

    in_head = True  # the next bytes belong to a request's line and headers
    head_bytes = 0  # bytes received since the head began (the read that began it may be left out)
    refused = False  # a 431 is the answer: nothing more is parsed, run or read

    def data_received(self, data: bytes) -> None:
        """Parse DATA as uvicorn does, counting it while a head is incomplete; 431 once the count passes the limit
        or a head that completed is over it."""
        if self.refused:
            return
        if self.in_head:
            self.head_bytes += len(data)
        super().data_received(data)
        if self.refused or (self.in_head and self.head_bytes > MAX_HEAD_BYTES):
            self.refuse_head()

    def on_headers_complete(self) -> None:
        """Start the request as uvicorn does, unless its line and headers (in one read) are over the limit."""
        self.in_head = False
        self.head_bytes = 0
        if self.refused or head_size(self.url, self.headers) > MAX_HEAD_BYTES:
            self.refused = True
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self.refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self.refused:
            super().on_message_complete()
        self.in_head = True

    def refuse_head(self) -> None:
        """Answer 431 with a JSON ``detail`` (as every other refusal) and close: the rest of the head is not read."""
        self.refused = True
        if self.transport.is_closing():
            return  # uvicorn answered already (a malformed request)
        body = json.dumps({"detail": HEAD_TOO_LARGE}).encode()
        lines = [b"HTTP/1.1 431 Request Header Fields Too Large\r\n"]
        lines += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        lines += [
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
            body,
        ]
        self.transport.write(b"".join(lines))
        self.transport.close()


def head_size(url: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    """The bytes of a parsed head's target and header lines (``name: value`` and a line end each)."""
    return len(url) + sum(len(name) + len(value) + 4 for name, value in headers)
