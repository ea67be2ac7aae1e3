"""Queries files of `needle search --queries FILE`, as a Pyserini user has them for ``--topics FILE``.

Every query is read and checked before anything heavy loads, so a bad file is one line naming the file, the line
and the field. A queries file is one of:

* JSON lines (``.jsonl``, or a first line starting with ``{``): BEIR's ``queries.jsonl`` (``{"_id", "text"}``),
  or Pyserini/Anserini JSONL topics (id in ``qid`` or ``id``, text in ``query`` or ``title``);
* TREC topics (a first line starting with ``<top``: ``<top>``, ``<num> Number: 301``, ``<title> ...`` and
  ``</top>`` on lines of their own, as Anserini's ``topics.*.txt``): the ``<title>`` is the query, as Pyserini
  searches it by default;
* a TSV of ``qid<TAB>text`` lines (MS MARCO and Pyserini's ``.tsv`` topics): any other first line with a tab.

Pyserini's ``.json`` topics (one object holding every topic) are refused, naming the formats read. Query ids are
unique (a repeat names both lines) and hold no whitespace, which would split a run's columns.
"""

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from components.checks import check_query
from components.converters.jsonl_lines import CorpusFormatError, iter_json_objects
from needle_retrieval.errors import NeedleError

ACCEPTED = "a BEIR queries.jsonl ({'_id', 'text'} lines), a qid<TAB>text TSV, or TREC topics (<top> <num> <title>)"
ID_FIELDS = ("_id", "qid", "id")  # BEIR, then Pyserini/Anserini JSONL topics
TEXT_FIELDS = ("text", "query", "title")
# Read whole before parsing: MS MARCO's million queries take about 50 MB; /dev/zero given as a file stops here.
MAX_FILE_BYTES = 256 << 20


@dataclass(frozen=True)
class Query:
    """One query of a queries file; ``line`` is where its id stands (1-based), for error messages."""

    qid: str
    text: str
    line: int


def read_queries(path: Path) -> list[Query]:
    """Every query of PATH, in file order, in whichever accepted format it is (``ACCEPTED``).

    :raises NeedleError: one line naming the file, the line and the field at fault, or the formats accepted.
    """
    try:
        data = _read_once(path)
        reader = _reader(path, data)
        queries = list(reader(path, data))
    except OSError as e:
        raise NeedleError(f"cannot read queries file {path}: {e.strerror or e}") from None
    except CorpusFormatError as e:
        raise NeedleError(str(e)) from None
    first: dict[str, int] = {}
    for query in queries:
        if query.qid in first:
            raise NeedleError(
                f"{path}, line {query.line}: duplicate query id {query.qid!r} (first on line {first[query.qid]})"
            )
        first[query.qid] = query.line
    return queries


def _read_once(path: Path) -> bytes:
    """PATH's bytes, read in one pass: a pipe (``<(...)``, ``/dev/stdin``) or a FIFO can be read only once, and its
    format is told from the same bytes that are then parsed.

    :raises NeedleError: for a file over ``MAX_FILE_BYTES``.
    """
    if path.suffix == ".json":
        raise NeedleError(f"{path}: a .json topics file (one object of all topics) is not read; expected {ACCEPTED}")
    with path.open("rb") as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise NeedleError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes, more than a queries file holds")
    return data


def _reader(path: Path, data: bytes) -> Callable[[Path, bytes], Iterator[Query]]:
    """The reader of PATH's format: JSONL by its extension or its first line, TREC topics or TSV by its first line."""
    if path.suffix == ".jsonl":
        return _jsonl_queries
    lines = io.BytesIO(data)
    head = next((line for line in lines if line.strip(b" \r\n")), b"").removeprefix(b"\xef\xbb\xbf").lstrip(b" ")
    if not head.strip():
        raise NeedleError(f"{path}: no queries; expected {ACCEPTED}")
    if head.startswith(b"{"):
        return _jsonl_queries
    if head.startswith(b"<top"):
        return _trec_topics
    if b"\t" in head:
        return _tsv_queries
    raise NeedleError(f"{path}: not a queries file this reads; expected {ACCEPTED}")


def _qid(path: Path, line: int, qid: object) -> str:
    """A query id: a non-empty string (or a JSON integer) without whitespace, which would split a run's columns."""
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if not isinstance(qid, str) or qid.split() != [qid] or not qid.isprintable():
        raise NeedleError(
            f"{path}, line {line}: query id {qid!r} must be a non-empty string without whitespace or control "
            "characters (a TREC run separates its columns by spaces; trec_eval stops at a NUL)"
        )
    return qid


def _text(path: Path, line: int, text: object, field: str) -> str:
    """A query text that ``components.checks.check_query`` accepts (non-blank, at most 1 MiB, valid Unicode)."""
    try:
        return check_query(text, field)
    except ValueError as e:
        raise NeedleError(f"{path}, line {line}: {e}") from None


def _jsonl_queries(path: Path, data: bytes) -> Iterator[Query]:
    """JSON lines: the id in the first of ``ID_FIELDS`` a line has, the text in the first of ``TEXT_FIELDS``."""
    for line, obj in iter_json_objects(path, io.BytesIO(data)):
        id_field = next((f for f in ID_FIELDS if f in obj), None)
        text_field = next((f for f in TEXT_FIELDS if f in obj), None)
        if id_field is None or text_field is None:
            names = ID_FIELDS if id_field is None else TEXT_FIELDS
            raise NeedleError(
                f"{path}, line {line}: no field {' or '.join(repr(n) for n in names)} (a BEIR query line is "
                '{"_id": ..., "text": ...})'
            )
        yield Query(_qid(path, line, obj[id_field]), _text(path, line, obj[text_field], f"field {text_field!r}"), line)


def _text_lines(path: Path, data: bytes) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without its line ending) of a UTF-8 file's DATA; a bad byte names its line."""
    with io.BytesIO(data) as handle:
        for number, raw in enumerate(handle, start=1):
            data = raw.removeprefix(b"\xef\xbb\xbf") if number == 1 else raw
            try:
                yield number, data.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                bad = f"byte 0x{data[e.start]:02x} at column {e.start + 1}"
                raise NeedleError(f"{path}, line {number}: not valid UTF-8 ({bad})") from None


def _tsv_queries(path: Path, data: bytes) -> Iterator[Query]:
    """``qid<TAB>text`` lines; blank lines are skipped."""
    for number, text in _text_lines(path, data):
        if not text.strip():
            continue
        fields = text.split("\t")
        if len(fields) != 2:
            raise NeedleError(f"{path}, line {number}: expected 2 tab-separated fields (qid, text), got {len(fields)}")
        yield Query(_qid(path, number, fields[0]), _text(path, number, fields[1], "the text (field 2)"), number)


def _tag_value(text: str, tag: str, prefix: str) -> str:
    """What follows TAG on a topic line, without its closing tag or a label such as ``Number:``."""
    value = text.strip().removeprefix(tag).replace(f"</{tag[1:]}", "").strip()
    return value[len(prefix) :].strip() if value.lower().startswith(prefix.lower()) else value


def _trec_topics(path: Path, data: bytes) -> Iterator[Query]:
    """TREC ad hoc topics: ``<top>``, ``<num> Number: N``, ``<title> text`` (or text on the next line), then
    ``<desc>`` and ``<narr>``, which a run does not search, up to ``</top>``; lines between topics are ignored."""
    start: int | None = None  # the line of the open topic's <top>
    num: tuple[int, str] | None = None
    title: tuple[int, str] | None = None
    for number, text in _text_lines(path, data):
        line = text.strip()
        if line.startswith("<top"):
            if start is not None:
                raise NeedleError(f"{path}, line {number}: <top> before the </top> of the topic on line {start}")
            start, num, title = number, None, None
        elif start is None:
            continue
        elif line.startswith("</top>"):
            yield _trec_topic(path, start, num, title)
            start = None
        elif line.startswith("<num>"):
            num = (number, _tag_value(line, "<num>", "Number:"))
        elif line.startswith("<title>"):
            title = (number, _tag_value(line, "<title>", "Topic:"))
        elif title is not None and not title[1] and line and not line.startswith("<"):  # title under its tag
            title = (number, line.replace("</title>", "").strip())
    if start is not None:
        raise NeedleError(f"{path}, line {start}: the topic has no </top>")


def _trec_topic(path: Path, start: int, num: tuple[int, str] | None, title: tuple[int, str] | None) -> Query:
    """The query of one closed topic: its <num> and its <title>, both required (an error names their line)."""
    if num is None or title is None:
        raise NeedleError(f"{path}, line {start}: the topic has no {'<num>' if num is None else '<title>'}")
    return Query(_qid(path, num[0], num[1]), _text(path, title[0], title[1], "<title>"), num[0])
