"""The one JSONL line reader of the project: every rule a line of a JSON-lines file must pass, in one place.

``needle index`` (through :func:`~components.converters.jsonl_corpus_reader.iter_corpus`) and the BEIR loader of
``needle eval`` both read through :func:`iter_json_objects`, so the same bad line gives the same one-line error
in both. A line becomes a JSON object only when all of this holds, else :class:`CorpusFormatError` names the
file, the 1-based line and, where there is one, the field:

* at most ``MAX_LINE_BYTES`` bytes (read in bounded pieces: one endless line cannot exhaust memory);
* strict UTF-8 (a UTF-8 byte-order mark on line 1 is ignored; CRLF endings are fine);
* standard JSON (RFC 8259): ``NaN``, ``Infinity`` and numbers that overflow to infinity are refused, and so are
  integers too long for Python to parse;
* containers nested at most ``MAX_JSON_DEPTH`` deep, checked on the text before parsing, so a line of 100,000
  brackets is an error naming the field, never a RecursionError;
* a JSON object at the top;
* valid Unicode in every key and string: a ``\\ud800`` escape decodes to a lone surrogate, which no store can
  encode later, so it is refused here, naming the field that holds it.

Blank lines at the end of the file (editors add them) are ignored; a blank line followed by more data is an
error, and so is a file without any object.
"""

import contextlib
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from components.checks import check_unicode

MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_JSON_DEPTH = 100
READ_BUFFER = 1 << 20  # bytes read from the file at a time: a build's writer threads get the GIL at each read

_BOM = b"\xef\xbb\xbf"
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:]', re.DOTALL)
_JSON_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


class CorpusFormatError(ValueError):
    """A JSONL line that cannot be used; the message names file, 1-based line and problem."""

    def __init__(self, path: str | os.PathLike[str], line: int | None, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


def json_type(value: Any) -> str:
    """JSON name of a parsed value's type, for error messages."""
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def iter_json_objects(
    path: str | os.PathLike[str], stream: BinaryIO | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """
    Yield ``(line number, object)`` for each line of a JSONL file, streaming (memory: one line).

    :param stream: the file's bytes when the caller has already read them (a pipe can be read only once); PATH then
        only names the file in errors.
    :raises CorpusFormatError: on the first line that breaks a rule of this module, or for a file without objects.
    :raises FileNotFoundError: when the file is missing.
    """
    path = Path(path)
    first_blank: int | None = None
    found = False
    with path.open("rb", buffering=READ_BUFFER) if stream is None else contextlib.nullcontext(stream) as handle:
        for line_no, line in enumerate(_raw_lines(handle, path), start=1):
            raw = line[len(_BOM) :] if line_no == 1 and line.startswith(_BOM) else line
            if not raw.strip():
                first_blank = first_blank or line_no
                continue
            if first_blank is not None:
                raise CorpusFormatError(path, first_blank, "blank line inside the file (one JSON object per line)")
            found = True
            yield line_no, parse_line(raw, path, line_no)
    if not found:
        raise CorpusFormatError(path, None, "empty file: no JSON objects")


def count_objects(path: str | os.PathLike[str]) -> int:
    """
    How many objects ``iter_json_objects`` yields for a valid file: its non-blank lines, counted without
    parsing (a pass over the bytes, memory: one line), so a streamed build can size its output and progress.

    :raises CorpusFormatError: a line longer than MAX_LINE_BYTES. :raises FileNotFoundError: a missing file.
    """
    path = Path(path)
    with path.open("rb", buffering=READ_BUFFER) as handle:
        lines = _raw_lines(handle, path)
        first = next(lines, b"")
        count = 1 if first.removeprefix(_BOM).strip() else 0
        return count + sum(1 for line in lines if line.strip())


def _raw_lines(handle: BinaryIO, path: Path) -> Iterator[bytes]:
    """The file's lines as bytes, none longer than MAX_LINE_BYTES (a longer one is an error naming it)."""
    line_no = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        line_no += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise CorpusFormatError(path, line_no, f"line longer than {MAX_LINE_BYTES:,} bytes (16 MiB)")
        yield raw


def parse_line(raw: bytes, path: Path, line_no: int) -> dict[str, Any]:
    """One non-blank line (bytes, with or without its line ending) as a checked JSON object."""
    text = _decode(raw.rstrip(b"\r\n"), path, line_no)
    _check_depth(text, path, line_no)
    if text.startswith("\ufeff"):  # json.loads' own check, which the decoder alone skips
        raise CorpusFormatError(path, line_no, "invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (column 1)")
    try:  # the whole line one JSON value, as almost every line is: json.loads without its two whitespace scans
        obj, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        obj, end = None, -1
    if end != len(text):  # whitespace around the value, more after it, or an error: json.loads' own handling and words
        obj = _decoded(text, path, line_no)
    if not isinstance(obj, dict):
        raise CorpusFormatError(path, line_no, f"expected a JSON object, got {json_type(obj)}")
    if "\\u" in text:  # only a \u escape can make a lone surrogate: the bytes were strict UTF-8
        _check_strings(obj, path, line_no)
    return obj


def _decoded(text: str, path: Path, line_no: int) -> Any:
    """``json.loads`` of TEXT with the module's hooks, its errors reported as a line error."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as e:
        raise CorpusFormatError(path, line_no, f"invalid JSON: {e.msg} (column {e.colno})") from None
    except (ValueError, RecursionError) as e:  # our hooks, Python's int digit limit, a very low recursion limit
        raise CorpusFormatError(path, line_no, f"invalid JSON: {e}") from None


def _decode(raw: bytes, path: Path, line_no: int) -> str:
    """Decode one line as strict UTF-8, naming the first bad byte and its column."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = raw[e.start]
        raise CorpusFormatError(path, line_no, f"not valid UTF-8 (byte 0x{bad:02x} at column {e.start + 1})") from None


def _refuse_constant(name: str) -> float:
    """``json`` hook for ``NaN``/``Infinity``/``-Infinity``, which RFC 8259 JSON does not have."""
    raise ValueError(f"{name} is not a JSON value (RFC 8259 has no NaN or Infinity)")


def _finite_float(literal: str) -> float:
    """``json`` hook for every number with a fraction or exponent: a literal beyond the float range is refused."""
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"number {literal[:40]} is out of the float range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
"""One decoder for every line (``json.loads`` with hooks builds a new one per call)."""


def _check_depth(text: str, path: Path, line_no: int) -> None:
    """Refuse containers nested deeper than MAX_JSON_DEPTH, naming the top-level field, before parsing."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return
    depth, key, pending = 0, None, None
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                where = f"field {key!r}" if key is not None else "the line"
                raise CorpusFormatError(path, line_no, f"{where} is nested deeper than {MAX_JSON_DEPTH} levels")
        elif mark in "]}":
            depth -= 1
        elif mark == ":":
            key = pending if depth == 1 else key
        elif depth == 1:
            pending = _key_text(mark)


def _key_text(token: str) -> str:
    """The text of a JSON string token, as near as it can be told (a malformed one is left to the parser)."""
    try:
        text = json.loads(token)
    except ValueError:
        return token
    return text if isinstance(text, str) else token  # _TOKENS only hands over string tokens


def _check_strings(obj: dict[str, Any], path: Path, line_no: int) -> None:
    """Refuse a key or string anywhere in ``obj`` that is not valid Unicode, naming its field path."""
    stack: list[tuple[str, Any]] = [("", obj)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            _check_text(value, f"field {where!r}", path, line_no)
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
        elif isinstance(value, dict):
            for key, item in value.items():
                _check_text(key, f"a key in {f'field {where!r}' if where else 'the line'}", path, line_no)
                stack.append((f"{where}.{key}" if where else key, item))


def _check_text(text: str, name: str, path: Path, line_no: int) -> None:
    """The shared Unicode rule of ``components.checks``, reported as a line error."""
    try:
        check_unicode(text, name)
    except ValueError as e:
        raise CorpusFormatError(path, line_no, str(e)) from None
