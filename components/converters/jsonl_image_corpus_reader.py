"""Read a multimodal JSONL corpus (the seed's ``is_multimodal``) into image Documents.

One line per image: ``{"id": "cat-1", "image_path": "img/cat.png", "contents": "a cat on a mat", ...}``.
``image_path`` is required; ``contents`` (a caption) is optional and becomes the Document's content (None
without one); ``id`` follows :mod:`components.converters.jsonl_corpus_reader`'s rules (line number when
missing, integers as strings, duplicates refused); every other key goes to ``meta`` unchanged.

Decisions, so a bad corpus fails while it is read and not half-way through embedding:

* ``image_path`` is resolved against the corpus file's directory and must stay inside it, symlinks
  followed: an absolute path, or one that escapes through ``..`` or a symlink, is refused. A corpus file is
  data, and data must not make ``needle index`` read (and store vectors of) any file the user can read.
* Each image is opened and verified with Pillow now: a missing, unreadable or non-image file (or one over
  Pillow's decompression-bomb limit) is a :class:`CorpusFormatError` naming the corpus file, line and path.
* ``meta["image_path"]`` is the resolved absolute path (so the index answers with a path that works from any
  working directory); ``meta["corpus_line"]`` the 1-based line. The pixels are not kept in ``blob``: the
  document store then holds paths, not images, and the image embedder reads each file when it embeds.
"""

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from PIL import Image

from components.converters.jsonl_corpus_reader import _take_id, _take_string
from components.converters.jsonl_lines import CorpusFormatError, iter_json_objects

__all__ = ["JSONLImageCorpusReader", "iter_image_corpus", "resolve_image_path"]

_IMAGE_FIELD = "image_path"
_CAPTION_FIELD = "contents"
_RESERVED_META = "corpus_line"


def resolve_image_path(corpus: Path, value: str, line_no: int) -> Path:
    """The image file that a line's ``image_path`` names: inside the corpus directory, else an error."""
    if not value.strip():
        raise CorpusFormatError(corpus, line_no, f"field '{_IMAGE_FIELD}' must not be empty")
    relative = Path(value)
    if relative.is_absolute():
        problem = f"field '{_IMAGE_FIELD}' must be relative to the corpus directory, got absolute path {value!r}"
        raise CorpusFormatError(corpus, line_no, problem)
    root = corpus.resolve().parent
    target = (root / relative).resolve()
    if not target.is_relative_to(root):
        problem = f"field '{_IMAGE_FIELD}' {value!r} leads outside the corpus directory {root}; refused"
        raise CorpusFormatError(corpus, line_no, problem)
    return target


def verify_image(corpus: Path, line_no: int, value: str, target: Path) -> None:
    """Open the image and check its data with Pillow, naming the line and path when it is not a usable image."""
    try:
        with Image.open(target) as image:
            image.verify()
    except FileNotFoundError:
        raise CorpusFormatError(corpus, line_no, f"image not found: {value!r} ({target})") from None
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as e:  # Pillow's ways to say "damaged"
        raise CorpusFormatError(corpus, line_no, f"not a readable image: {value!r} ({target}): {e}") from None


def _to_image_document(obj: dict[str, Any], corpus: Path, line_no: int) -> Document:
    """One parsed line as an image Document (content = caption or None)."""
    value = _take_string(obj, _IMAGE_FIELD, corpus, line_no, required=True)
    if value is None:  # required=True raised already; this tells mypy
        raise CorpusFormatError(corpus, line_no, f"missing field '{_IMAGE_FIELD}'")
    target = resolve_image_path(corpus, value, line_no)
    verify_image(corpus, line_no, value, target)
    caption = _take_string(obj, _CAPTION_FIELD, corpus, line_no, required=False)
    obj.pop(_CAPTION_FIELD, None)
    doc_id = _take_id(obj, "id", corpus, line_no, False)
    _take_string(obj, "title", corpus, line_no, required=False)  # a title stays in meta, but must be a string
    if _RESERVED_META in obj:
        raise CorpusFormatError(corpus, line_no, f"field '{_RESERVED_META}' is reserved for the reader; rename it")
    obj[_IMAGE_FIELD] = str(target)
    obj[_RESERVED_META] = line_no
    return Document(id=doc_id, content=caption, meta=obj)


def iter_image_corpus(path: str | os.PathLike[str]) -> Iterator[Document]:
    """Stream image Documents from a multimodal JSONL corpus, in file order.

    :raises CorpusFormatError: the first bad line (JSON rules of ``jsonl_lines``, a missing, escaping, missing-file
        or non-image ``image_path``, a duplicate id); the message names the corpus file, line and path.
    :raises FileNotFoundError: the corpus file is missing.
    """
    corpus = Path(path)
    seen: dict[str, int] = {}
    for line_no, obj in iter_json_objects(corpus):
        doc = _to_image_document(obj, corpus, line_no)
        if doc.id in seen:
            raise CorpusFormatError(corpus, line_no, f"duplicate id '{doc.id}' (first used on line {seen[doc.id]})")
        seen[doc.id] = line_no
        yield doc


@component
class JSONLImageCorpusReader:
    """Reads a multimodal JSONL corpus (``image_path`` lines, optional ``contents`` caption) into image Documents.

    ```python
    reader = JSONLImageCorpusReader()
    docs = reader.run(path="photos/corpus.jsonl")["documents"]  # meta["image_path"]: absolute, verified
    ```
    """

    def __init__(self, path: str | None = None) -> None:
        """Create the reader.

        :param path: Default corpus file, used when `run` gets no path.
        """
        if path is not None and (not isinstance(path, str) or not path):
            raise ValueError(f"path must be a non-empty string or None, got {path!r}")
        self.path = path

    def to_dict(self) -> dict[str, Any]:
        """Serialize the component to a dictionary."""
        return default_to_dict(self, path=self.path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "JSONLImageCorpusReader":
        """Deserialize the component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, path: str | None = None) -> dict[str, list[Document]]:
        """Read the corpus at `path` (or the init default) into image Documents, in file order.

        :raises ValueError: No path given here or at init.
        :raises CorpusFormatError: A bad line; the message names the corpus file, line and image path.
        """
        source = path if path is not None else self.path
        if source is None:
            raise ValueError("JSONLImageCorpusReader needs a path: pass it to run() or to __init__")
        return {"documents": list(iter_image_corpus(source))}

    @component.output_types(documents=list[Document])
    async def run_async(self, path: str | None = None) -> dict[str, list[Document]]:
        """Same as `run`, reading the files in a worker thread so the event loop stays free."""
        return await asyncio.to_thread(self.run, path)
