"""Property: whatever a corpus file holds, the corpus reader either yields Documents that carry each line's text
exactly, or raises one CorpusFormatError naming the file and a line -- never another exception, and never a
Document that a store could not encode later (a lone surrogate).

Lines are drawn as valid UltraRAG/BEIR objects, arbitrary JSON values, deep nesting, JSON written with raw
surrogate bytes, arbitrary text and arbitrary bytes; files hold one to three of them, with BOMs, CRLF endings and
blank lines mixed in.
"""

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.converters import CorpusFormatError, iter_corpus

ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())
TEXT = st.text(ANY_CHAR, max_size=12) | st.sampled_from(["", " ", "\ud800", "a\udfff", "\ud83d\ude00", "\x00"])
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | TEXT
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8
)
TEXT_KEY = st.sampled_from(["contents", "text"])
OBJECTS = st.builds(
    lambda key, text, extra: {key: text, **extra},
    TEXT_KEY,
    TEXT | SCALARS,
    st.dictionaries(st.sampled_from(["id", "_id", "title", "image_path", "corpus_line", "meta"]), JSON_VALUES),
)
DEEP = st.builds(
    lambda n, kind: ('{"contents": "x", "m": ' + "[" * n + "]" * n + "}") if kind else "[" * n + "]" * n,
    st.integers(90, 3000),
    st.booleans(),
)


def _encoded(value: Any, ascii_only: bool) -> bytes:
    """``value`` as one JSON line: \\u escapes for everything, or raw characters (lone surrogates as raw bytes)."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    return text.encode("utf-8", "surrogatepass")


VALID_LOOKING = st.builds(_encoded, OBJECTS, st.booleans())
OTHER_LINES = st.one_of(
    st.builds(_encoded, JSON_VALUES, st.booleans()),
    DEEP.map(str.encode),
    st.text(ANY_CHAR, max_size=30).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=30),
)
ENDINGS = st.sampled_from([b"\n", b"\r\n"])


@st.composite
def corpus_files(draw: st.DrawFn) -> bytes:
    """One to three lines with their endings, maybe a BOM in front and blank lines anywhere (objects most often)."""
    kinds = draw(st.lists(st.integers(0, 9), min_size=1, max_size=3))
    lines = [draw(VALID_LOOKING if kind < 6 else OTHER_LINES if kind < 9 else st.just(b"")) for kind in kinds]
    body = b"".join(line.replace(b"\n", b" ").replace(b"\r", b" ") + draw(ENDINGS) for line in lines)
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + body


def _expected_content(obj: dict, first: dict) -> str:
    """The text a Document of ``obj`` must carry, by the reader's documented rules (layout from the first line)."""
    key = "contents" if "contents" in first else "text"
    title = obj.get("title")
    return f"{title}\n{obj[key]}" if key == "text" and title else obj[key]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus_files())
def test_the_reader_yields_each_lines_text_or_one_line_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.jsonl"
        path.write_bytes(data)
        try:
            documents = list(iter_corpus(path))
        except CorpusFormatError as error:
            message = str(error)
            assert re.match(rf"{re.escape(str(path))}(, line \d+)?: \S", message), message
            assert "\n" not in message
            return
    lines = data.removeprefix(b"\xef\xbb\xbf").splitlines()
    objects = [json.loads(line) for line in lines if line.strip()]
    assert len(documents) == len(objects)
    for document, obj in zip(documents, objects, strict=True):
        assert document.content == _expected_content(obj, objects[0])
        assert json.loads(lines[document.meta["corpus_line"] - 1]) == obj
        json.dumps([document.id, document.content, document.meta], ensure_ascii=False).encode("utf-8")
