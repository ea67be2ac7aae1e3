"""Read a JSONL retrieval corpus (UltraRAG or BEIR layout) into Haystack Documents.

Two layouts are recognised from the first JSON object of the file:

* UltraRAG: ``{"id": ..., "title": ..., "contents": ..., "image_path": ...}`` -- ``contents`` is required,
  the rest optional. ``image_path`` is resolved relative to the corpus file and kept in ``meta``.
* BEIR: ``{"_id": ..., "title": ..., "text": ..., "metadata": {...}}``.

Decisions, so nothing is skipped silently:

* ``Document.id`` is the corpus id (integers become strings). A line without an id gets its 1-based line
  number as id, so ids stay stable when lines are appended.
* A repeated id is an error by default (``duplicate_ids="error"``): search results name passages by id, and
  BEIR qrels judge them by it. ``duplicate_ids="position"`` follows UltraRAG instead, which keys passages by
  their row and whose own example corpus repeats ids: a repeat becomes ``<id>#<line>`` (the 1-based line; a
  further ``.2``, ``.3``... should that be taken too), and ``meta["corpus_id"]`` keeps the id as the file gives
  it. The first line with an id keeps it unchanged, so ids are deterministic and rows are never merged.
* ``meta["corpus_line"]`` is the 1-based physical line number; the output list keeps file order, so output
  position ``i`` is row ``i`` of an embeddings matrix built from it.
* Keys other than the id and text fields go to ``meta`` unchanged (``title`` included).
* Each line passes the rules of :mod:`components.converters.jsonl_lines`, the one JSONL line reader that the
  BEIR loader shares: strict UTF-8 (a BOM and CRLF endings are fine), standard JSON, nesting at most 100 deep,
  valid Unicode in every string (no lone surrogate from a ``\ud800`` escape), at most 16 MiB a line; trailing
  blank lines are ignored, a blank line before more data is an error.
* Every other problem raises :class:`CorpusFormatError` naming the file, the line and the field.
"""

import asyncio
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.converters.jsonl_lines import CorpusFormatError, iter_json_objects, json_type
from components.stores.hits import text_document

__all__ = ["CorpusFormatError", "JSONLCorpusReader", "iter_corpus"]

_RESERVED_META = "corpus_line"
_CORPUS_ID = "corpus_id"  # meta key of a renamed duplicate's id as the file gives it (duplicate_ids="position")
DUPLICATE_IDS = ("error", "position")
_OTHER_ID = {"id": "_id", "_id": "id"}  # UltraRAG's and BEIR's id fields: a corpus uses one of them throughout


@dataclass(frozen=True)
class _Layout:
    """The field names of one corpus file, fixed by its first object (or by the user)."""

    content: str
    id: str
    title_in_content: bool
    id_required: bool


def _detect_layout(
    first: dict[str, Any], options: tuple[str | None, str | None, bool | None, bool], path: Path, line_no: int
) -> _Layout:
    """Choose the text and id fields from the first object: ``contents`` means UltraRAG, ``text`` means BEIR."""
    content_field, id_field, title_in_content, require_id = options
    content = content_field
    if content is None:
        content = "contents" if "contents" in first else "text" if "text" in first else None
    if content is None:
        problem = "missing text field: expected 'contents' (UltraRAG) or 'text' (BEIR); set content_field otherwise"
        raise CorpusFormatError(path, line_no, problem)
    ident = id_field or ("_id" if "_id" in first else "id")
    with_title = title_in_content if title_in_content is not None else content == "text"
    return _Layout(content=content, id=ident, title_in_content=with_title, id_required=require_id)


def _take_id(obj: dict[str, Any], field: str, path: Path, line_no: int, required: bool) -> str:
    """Pop the id field; integers become strings, a missing id becomes the line number unless ``required``."""
    value = obj.pop(field, None)
    if value is None and _OTHER_ID.get(field) in obj:  # its id would silently become the line number
        problem = f"id in '{_OTHER_ID[field]}', but this corpus's ids are in '{field}' (as on its first line)"
        raise CorpusFormatError(path, line_no, f"{problem}: use one id field throughout")
    if value is None and required:
        raise CorpusFormatError(path, line_no, f"missing id field '{field}'")
    if value is None:
        return str(line_no)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise CorpusFormatError(path, line_no, f"field '{field}' must be a string or integer, got {json_type(value)}")
    if value == "":
        raise CorpusFormatError(path, line_no, f"field '{field}' must not be empty")
    return str(value)


def _take_string(obj: dict[str, Any], field: str, path: Path, line_no: int, *, required: bool) -> str | None:
    """Read a string field, failing on a missing required field or a non-string value."""
    if field not in obj:
        if required:
            raise CorpusFormatError(path, line_no, f"missing text field '{field}'")
        return None
    value = obj[field]
    if not isinstance(value, str):
        raise CorpusFormatError(path, line_no, f"field '{field}' must be a string, got {json_type(value)}")
    return value


def _to_document(obj: dict[str, Any], layout: _Layout, path: Path, line_no: int) -> Document:
    """Turn one parsed line into a Document; the remaining keys become meta."""
    content = _take_string(obj, layout.content, path, line_no, required=True)
    del obj[layout.content]
    doc_id = _take_id(obj, layout.id, path, line_no, layout.id_required)
    title = _take_string(obj, "title", path, line_no, required=False)
    image = _take_string(obj, "image_path", path, line_no, required=False)
    if image is not None:
        obj["image_path"] = str(path.parent / image)
    if _RESERVED_META in obj:
        raise CorpusFormatError(path, line_no, f"field '{_RESERVED_META}' is reserved for the reader; rename it")
    obj[_RESERVED_META] = line_no
    if layout.title_in_content and title:
        content = f"{title}\n{content}"
    return text_document(doc_id, content, obj)  # checked above: a non-empty id, a string content


def iter_corpus(
    path: str | os.PathLike[str],
    *,
    content_field: str | None = None,
    id_field: str | None = None,
    title_in_content: bool | None = None,
    require_id: bool = False,
    duplicate_ids: str = "error",
) -> Iterator[Document]:
    """Stream Documents from a JSONL corpus line by line (memory: one line plus the set of ids seen).

    Parameters as for :class:`JSONLCorpusReader`, plus ``require_id``: a line without the id field is an error
    instead of taking its line number as id (the BEIR loader's rule: qrels name documents by ``_id``).
    Raises :class:`CorpusFormatError` on the first bad line, ``FileNotFoundError`` when the file is missing.
    """
    path = Path(path)
    by_position = _check_duplicate_ids(duplicate_ids)
    layout: _Layout | None = None
    seen: dict[str, int] = {}
    for line_no, obj in iter_json_objects(path):
        if layout is None:
            layout = _detect_layout(obj, (content_field, id_field, title_in_content, require_id), path, line_no)
        if by_position and _CORPUS_ID in obj:
            problem = f"field '{_CORPUS_ID}' is reserved for the reader with duplicate_ids='position'; rename it"
            raise CorpusFormatError(path, line_no, problem)
        doc = _to_document(obj, layout, path, line_no)
        if doc.id in seen:
            if not by_position:
                raise CorpusFormatError(path, line_no, f"duplicate id '{doc.id}' (first used on line {seen[doc.id]})")
            doc = _renamed(doc, _unique_id(doc.id, line_no, seen))
        seen[doc.id] = line_no
        yield doc


def _check_duplicate_ids(value: Any) -> bool:
    """Whether VALUE (the ``duplicate_ids`` option) keys repeats by position; a ValueError unless it is valid."""
    if value not in DUPLICATE_IDS:
        raise ValueError(f"duplicate_ids must be one of {', '.join(DUPLICATE_IDS)}, got {value!r}")
    return bool(value == "position")


def _unique_id(doc_id: str, line_no: int, seen: dict[str, int]) -> str:
    """``<id>#<line>``, or ``<id>#<line>.<n>`` for the smallest n >= 2 not taken (a corpus may hold such ids)."""
    candidate, n = f"{doc_id}#{line_no}", 1
    while candidate in seen:
        n += 1
        candidate = f"{doc_id}#{line_no}.{n}"
    return candidate


def _renamed(doc: Document, new_id: str) -> Document:
    """DOC under NEW_ID, its corpus id kept in ``meta["corpus_id"]``."""
    return text_document(new_id, doc.content, {**doc.meta, _CORPUS_ID: doc.id})


@component
class JSONLCorpusReader:
    """Reads a JSONL corpus (UltraRAG ``contents`` or BEIR ``text`` lines) into Documents that keep corpus ids.

    ```python
    reader = JSONLCorpusReader()
    docs = reader.run(path="scifact/corpus.jsonl")["documents"]  # ids are the BEIR `_id`s, title + "\\n" + text
    ```
    """

    def __init__(
        self,
        path: str | None = None,
        content_field: str | None = None,
        id_field: str | None = None,
        title_in_content: bool | None = None,
        duplicate_ids: str = "error",
    ) -> None:
        """Create the reader.

        :param path: Default corpus file, used when `run` gets no path.
        :param content_field: Field holding the passage text. `None` detects it from the first line:
            `contents` (UltraRAG) or else `text` (BEIR).
        :param id_field: Field holding the passage id. `None` means `_id` when the first line has it, else `id`.
        :param title_in_content: Prepend `title + "\\n"` to the text (when a line has a non-empty title).
            `None` (default) follows each layout's practice: yes for BEIR `text` lines, whose text lacks the
            title, no otherwise (UltraRAG `contents` usually already hold it). The title stays in `meta` anyway.
        :param duplicate_ids: `"error"` (default): a repeated id is a CorpusFormatError naming both lines.
            `"position"`: UltraRAG's rule (rows are keyed by position): a repeat gets the id `<id>#<line>` and
            `meta["corpus_id"]` keeps the id the file gives (see the module docstring).
        """
        for name, value in (("content_field", content_field), ("id_field", id_field)):
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{name} must be a non-empty string or None, got {value!r}")
        if content_field is not None and content_field == id_field:
            raise ValueError(f"content_field and id_field must differ, both are {content_field!r}")
        _check_duplicate_ids(duplicate_ids)
        self.path = path
        self.content_field = content_field
        self.id_field = id_field
        self.title_in_content = title_in_content
        self.duplicate_ids = duplicate_ids
        self._cursor: _Cursor | None = None  # the read a run with the next `skip` continues (see `run`)

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component to a dictionary."""
        return default_to_dict(
            self,
            path=self.path,
            content_field=self.content_field,
            id_field=self.id_field,
            title_in_content=self.title_in_content,
            duplicate_ids=self.duplicate_ids,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "JSONLCorpusReader":
        """Deserialize the component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, path: str | None = None, skip: int = 0, limit: int | None = None) -> dict[str, list[Document]]:
        """Read the corpus at `path` (or the init default) into Documents, in file order.

        `skip` and `limit` select documents `skip` to `skip + limit` (all the rest when `limit` is None), so an
        indexing pipeline can run once per chunk of a corpus in bounded memory. A run that starts where the
        previous one of the same path stopped reads on from it instead of parsing the skipped lines again;
        ids are checked for duplicates against every line read so far either way.

        :raises ValueError: No path given here or at init; `skip` < 0 or `limit` < 1 (or not integers).
        :raises CorpusFormatError: A bad line; the message names the file, line and problem.
        """
        source = path if path is not None else self.path
        if source is None:
            raise ValueError("JSONLCorpusReader needs a path: pass it to run() or to __init__")
        if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
            raise ValueError(f"skip must be an integer >= 0, got {skip!r}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ValueError(f"limit must be an integer >= 1 or None, got {limit!r}")
        cursor = self._cursor if self._cursor is not None and self._cursor.continues(source, skip) else None
        self._cursor = None  # a failing read leaves no cursor behind: the next run starts afresh
        if cursor is None:
            cursor = _Cursor(source, iter_corpus(source, **self._options()))
            cursor.skip(skip)
        documents = cursor.take(limit)
        if limit is not None and len(documents) == limit:
            self._cursor = cursor  # more may follow; a shorter read reached the end and closed the file
        return {"documents": documents}

    def _options(self) -> dict[str, Any]:
        """The layout options `iter_corpus` takes, as set at init."""
        return {
            "content_field": self.content_field,
            "id_field": self.id_field,
            "title_in_content": self.title_in_content,
            "duplicate_ids": self.duplicate_ids,
        }

    @component.output_types(documents=list[Document])
    async def run_async(
        self, path: str | None = None, skip: int = 0, limit: int | None = None
    ) -> dict[str, list[Document]]:
        """Same as `run`, reading the file in a worker thread so the event loop stays free."""
        return await asyncio.to_thread(self.run, path, skip, limit)


class _Cursor:
    """An open read of one corpus file: the documents still to come and how many were read already."""

    def __init__(self, source: str | os.PathLike[str], documents: Iterator[Document]) -> None:
        self.source = os.fspath(source)
        self.position = 0
        self._documents = documents

    def continues(self, source: str | os.PathLike[str], skip: int) -> bool:
        """Whether a read of SOURCE from document SKIP on is this cursor's next read."""
        return os.fspath(source) == self.source and skip == self.position

    def skip(self, count: int) -> None:
        """Read past the next COUNT documents (parsed and checked, not kept)."""
        for _ in itertools.islice(self._documents, count):
            self.position += 1

    def take(self, limit: int | None) -> list[Document]:
        """The next LIMIT documents (all the rest when None); fewer at the end of the file."""
        documents = list(itertools.islice(self._documents, limit))
        self.position += len(documents)
        return documents
