"""JSONLCorpusReader: both corpus layouts, every bad-input message, serialization, SciFact as it ships."""

import asyncio
import json
import re
from pathlib import Path

import pytest
from haystack import Pipeline

from components.converters import CorpusFormatError, JSONLCorpusReader, iter_corpus


def write_lines(tmp_path: Path, *lines: str, name: str = "corpus.jsonl") -> Path:
    """Write `lines` joined by newlines (plus a final newline) and return the path."""
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read(path: Path, **options: object) -> list:
    """Documents read by a reader built with `options`."""
    return JSONLCorpusReader(**options).run(path=str(path))["documents"]


def error_for(path: Path, **options: object) -> str:
    """The CorpusFormatError message raised when reading `path`."""
    with pytest.raises(CorpusFormatError) as info:
        read(path, **options)
    return str(info.value)


def test_ultrarag_lines_keep_ids_order_title_and_extra_keys(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        '{"id": "p-2", "title": "Zeta", "contents": "zeta text", "source": "wiki"}',
        '{"id": 7, "contents": "seven"}',
        '{"contents": "no id here"}',
    )
    docs = read(path)
    assert [d.id for d in docs] == ["p-2", "7", "3"]
    assert [d.content for d in docs] == ["zeta text", "seven", "no id here"]
    assert docs[0].meta == {"title": "Zeta", "source": "wiki", "corpus_line": 1}
    assert [d.meta["corpus_line"] for d in docs] == [1, 2, 3]


def test_ultrarag_title_is_prepended_only_on_request(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"id": "a", "title": "Zeta", "contents": "zeta text"}')
    assert read(path, title_in_content=True)[0].content == "Zeta\nzeta text"


def test_image_path_is_resolved_relative_to_the_corpus_file(tmp_path: Path) -> None:
    sub = tmp_path / "mm"
    sub.mkdir()
    path = write_lines(sub, '{"id": "i", "contents": "a cat", "image_path": "img/cat.png"}')
    assert read(path)[0].meta["image_path"] == str(sub / "img" / "cat.png")


def test_beir_lines_get_title_and_text_by_default(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        '{"_id": "4983", "title": "Brains", "text": "White matter.", "metadata": {}}',
        '{"_id": "5", "title": "", "text": "Untitled."}',
    )
    docs = read(path)
    assert [(d.id, d.content) for d in docs] == [("4983", "Brains\nWhite matter."), ("5", "Untitled.")]
    assert docs[0].meta == {"title": "Brains", "metadata": {}, "corpus_line": 1}
    assert read(path, title_in_content=False)[0].content == "White matter."


def test_custom_fields(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"pid": "x1", "body": "custom body", "id": "kept in meta"}')
    doc = read(path, content_field="body", id_field="pid")[0]
    assert (doc.id, doc.content, doc.meta["id"]) == ("x1", "custom body", "kept in meta")


def test_trailing_blank_lines_crlf_and_bom_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "contents": "x"}\r\n{"id": "b", "contents": "y"}\r\n\r\n  \n')
    assert [(d.id, d.content) for d in read(path)] == [("a", "x"), ("b", "y")]


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (
            ['{"id": "a", "contents": "fine"}', '{"id": "b", "contents": '],
            "line 2: invalid JSON: Expecting value (column 25)",
        ),
        (['{"id": 1,}'], "line 1: invalid JSON: Expecting property name enclosed in double quotes (column 10)"),
        (
            ['{"id": "a", "contents": "fine"}', '\ufeff{"id": "b", "contents": "x"}'],
            "line 2: invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) (column 1)",
        ),
        (
            ['{"id": "a", "body": "x"}'],
            "line 1: missing text field: expected 'contents' (UltraRAG) or 'text' (BEIR); set content_field otherwise",
        ),
        (['{"id": "a", "contents": "x"}', '{"id": "b", "text": "y"}'], "line 2: missing text field 'contents'"),
        (['{"id": "a", "contents": "x"}', '["a", "b"]'], "line 2: expected a JSON object, got array"),
        (['"just a string"'], "line 1: expected a JSON object, got string"),
        (
            ['{"id": "a", "contents": "x"}', '{"id": "b", "contents": "y"}', '{"id": "a", "contents": "z"}'],
            "line 3: duplicate id 'a' (first used on line 1)",
        ),
        (
            ['{"id": "2", "contents": "x"}', '{"contents": "line two gets id 2"}'],
            "line 2: duplicate id '2' (first used on line 1)",
        ),
        (
            ['{"id": "a", "contents": "x"}', "", '{"id": "b", "contents": "y"}'],
            "line 2: blank line inside the file (one JSON object per line)",
        ),
        (['{"id": null, "contents": 3}'], "line 1: field 'contents' must be a string, got number"),
        (['{"id": ["a"], "contents": "x"}'], "line 1: field 'id' must be a string or integer, got array"),
        (['{"id": true, "contents": "x"}'], "line 1: field 'id' must be a string or integer, got boolean"),
        (['{"id": "", "contents": "x"}'], "line 1: field 'id' must not be empty"),
        (['{"id": "a", "contents": "x", "title": 5}'], "line 1: field 'title' must be a string, got number"),
        (
            ['{"id": "a", "contents": "x", "corpus_line": 9}'],
            "line 1: field 'corpus_line' is reserved for the reader; rename it",
        ),
    ],
)
def test_bad_lines_name_file_line_and_problem(tmp_path: Path, lines: list[str], problem: str) -> None:
    path = write_lines(tmp_path, *lines)
    assert error_for(path) == f"{path}, {problem}"


def test_non_utf8_bytes_name_line_byte_and_column(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"id": "a", "contents": "ok"}\n{"id": "b", "contents": "caf\xe9"}\n')
    assert error_for(path) == f"{path}, line 2: not valid UTF-8 (byte 0xe9 at column 29)"


DEEP = 100_000


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("[" * DEEP + "]" * DEEP, "line 1: the line is nested deeper than 100 levels"),
        ('{"contents": "x", "a": ' + '{"a": ' * DEEP + "1" + "}" * (DEEP + 1), "line 1: field 'a' is nested deeper"),
        ('{"contents": "x", "m": ' + "[" * 101 + "]" * 101 + "}", "line 1: field 'm' is nested deeper than 100 levels"),
        ('{"contents": "x", "m": "' + "[" * 200 + '"}', None),  # brackets inside a string are text
        ('{"contents": "x", "m": ' + "[" * 99 + "]" * 99 + "}", None),  # 100 levels with the line's own object
    ],
)
def test_deep_nesting_is_a_line_error_never_a_recursion_error(tmp_path: Path, line: str, problem: str | None) -> None:
    path = write_lines(tmp_path, '{"contents": "first"}', line)
    if problem is None:
        assert read(path)[1].meta["m"] is not None
    else:
        assert error_for(path).startswith(f"{path}, {problem.replace('line 1', 'line 2')}")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (r'{"contents": "\ud800"}', r"field 'contents' is not valid Unicode: lone surrogate '\ud800' at character 0"),
        (r'{"contents": "ok", "title": "a\udfff"}', r"field 'title' is not valid Unicode: lone surrogate '\udfff'"),
        (r'{"contents": "ok", "tags": ["x", "\ud83d"]}', r"field 'tags[1]' is not valid Unicode"),
        (r'{"contents": "ok", "m": {"\ud800": 1}}', r"a key in field 'm' is not valid Unicode"),
        (r'{"_id": "\udc00", "text": "ok"}', r"field '_id' is not valid Unicode"),
    ],
)
def test_a_lone_surrogate_escape_is_refused_naming_the_field(tmp_path: Path, line: str, problem: str) -> None:
    """A ``\\ud800`` escape parses to a string no store can encode: refused here, before anything is written."""
    path = write_lines(tmp_path, line)
    assert error_for(path).startswith(f"{path}, line 1: {problem}")


def test_a_surrogate_pair_escape_is_one_valid_character(tmp_path: Path) -> None:
    path = write_lines(tmp_path, r'{"contents": "smile \ud83d\ude00"}')
    assert read(path)[0].content == "smile \U0001f600"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("NaN", "invalid JSON: NaN is not a JSON value"),
        ("-Infinity", "invalid JSON: -Infinity is not a JSON value"),
        ("1e400", "invalid JSON: number 1e400 is out of the float range"),
        ("9" * 5000, "invalid JSON: Exceeds the limit"),
    ],
)
def test_numbers_outside_standard_json_are_line_errors(tmp_path: Path, value: str, problem: str) -> None:
    path = write_lines(tmp_path, '{"contents": "x", "score": ' + value + "}")
    assert error_for(path).startswith(f"{path}, line 1: {problem}")


def test_a_line_over_16_mib_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as f:
        f.write(b'{"contents": "fine"}\n{"contents": "' + b"x" * (16 * 1024 * 1024) + b'"}\n')
    assert error_for(path) == f"{path}, line 2: line longer than 16,777,216 bytes (16 MiB)"


def test_a_large_line_under_the_limit_is_read(tmp_path: Path) -> None:
    text = "word " * 1_000_000
    path = write_lines(tmp_path, json.dumps({"id": "big", "contents": text}))
    assert read(path)[0].content == text


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_file_is_an_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    assert error_for(path) == f"{path}: empty file: no JSON objects"


def test_error_carries_path_line_and_problem_attributes(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"id": "a", "contents": "x"}', "{")
    with pytest.raises(CorpusFormatError) as info:
        read(path)
    assert (info.value.path, info.value.line) == (str(path), 2)
    assert info.value.problem.startswith("invalid JSON")
    assert isinstance(info.value, ValueError)


def test_streaming_yields_good_lines_before_the_bad_one(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"id": "a", "contents": "x"}', "oops")
    stream = iter_corpus(path)
    assert next(stream).id == "a"
    with pytest.raises(CorpusFormatError, match="line 2: invalid JSON"):
        next(stream)


def test_path_comes_from_run_or_init(tmp_path: Path) -> None:
    first = write_lines(tmp_path, '{"id": "init", "contents": "x"}', name="a.jsonl")
    second = write_lines(tmp_path, '{"id": "run", "contents": "y"}', name="b.jsonl")
    reader = JSONLCorpusReader(path=str(first))
    assert reader.run()["documents"][0].id == "init"
    assert reader.run(path=str(second))["documents"][0].id == "run"
    with pytest.raises(ValueError, match="needs a path"):
        JSONLCorpusReader().run()
    with pytest.raises(FileNotFoundError):
        JSONLCorpusReader().run(path=str(tmp_path / "missing.jsonl"))


def test_run_async_matches_run(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"id": "a", "contents": "x"}')
    reader = JSONLCorpusReader()
    assert asyncio.run(reader.run_async(path=str(path))) == reader.run(path=str(path))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"content_field": ""}, "content_field must be a non-empty string or None, got ''"),
        ({"id_field": 3}, "id_field must be a non-empty string or None, got 3"),
        ({"content_field": "x", "id_field": "x"}, "content_field and id_field must differ, both are 'x'"),
        ({"duplicate_ids": "merge"}, "duplicate_ids must be one of error, position, got 'merge'"),
    ],
)
def test_bad_parameters_fail_at_init(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        JSONLCorpusReader(**options)
    assert str(info.value) == message


def test_to_dict_from_dict_and_yaml_round_trip(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"pid": "q", "body": "b", "title": "T"}')
    reader = JSONLCorpusReader(
        path=str(path), content_field="body", id_field="pid", title_in_content=True, duplicate_ids="position"
    )
    assert reader.to_dict()["init_parameters"]["duplicate_ids"] == "position"
    clone = JSONLCorpusReader.from_dict(reader.to_dict())
    assert clone.to_dict() == reader.to_dict()
    pipeline = Pipeline()
    pipeline.add_component("reader", reader)
    loaded = Pipeline.loads(pipeline.dumps())
    docs = loaded.run({"reader": {}})["reader"]["documents"]
    assert [(d.id, d.content) for d in docs] == [("q", "T\nb")]


def test_scifact_corpus_reads_whole_with_beir_ids(scifact_dir: Path) -> None:
    corpus = scifact_dir / "corpus.jsonl"
    docs = read(corpus)
    first = json.loads(corpus.open(encoding="utf-8").readline())
    assert len(docs) == 5183
    assert len({d.id for d in docs}) == 5183
    assert docs[0].id == first["_id"]
    assert docs[0].content == f"{first['title']}\n{first['text']}"
    assert docs[-1].meta["corpus_line"] == 5183


# --- duplicate_ids="position": UltraRAG's rule (rows keyed by position; its example corpus repeats ids) ----------


def test_repeated_ids_by_position_keep_every_row_and_the_corpus_id(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        '{"id": "15", "contents": "first"}',
        '{"id": "15", "contents": "second"}',
        '{"id": 15, "contents": "third"}',
        '{"id": "9", "contents": "other"}',
    )
    docs = read(path, duplicate_ids="position")
    assert [(d.id, d.content) for d in docs] == [("15", "first"), ("15#2", "second"), ("15#3", "third"), ("9", "other")]
    assert [d.meta.get("corpus_id") for d in docs] == [None, "15", "15", None]
    assert [d.meta["corpus_line"] for d in docs] == [1, 2, 3, 4]
    assert [d.id for d in iter_corpus(path, duplicate_ids="position")] == [d.id for d in docs]


def test_a_made_id_never_takes_one_the_corpus_uses(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path,
        '{"id": "a#3", "contents": "a real id that looks made"}',
        '{"id": "a", "contents": "x"}',
        '{"id": "a", "contents": "y"}',
        '{"id": "a#3", "contents": "a repeat of the first"}',
    )
    ids = [d.id for d in read(path, duplicate_ids="position")]
    assert ids == ["a#3", "a", "a#3.2", "a#3#4"]
    assert len(set(ids)) == len(ids)


def test_chunked_reads_by_position_give_the_one_shot_ids(tmp_path: Path) -> None:
    path = write_lines(tmp_path, *[f'{{"id": "{i % 2}", "contents": "row {i}"}}' for i in range(7)])
    reader = JSONLCorpusReader(duplicate_ids="position")
    chunks = [reader.run(path=str(path), skip=start, limit=3)["documents"] for start in (0, 3, 6)]
    assert [d.id for chunk in chunks for d in chunk] == [d.id for d in read(path, duplicate_ids="position")]


def test_corpus_id_is_reserved_by_position_only(tmp_path: Path) -> None:
    path = write_lines(tmp_path, '{"id": "a", "contents": "x", "corpus_id": "c"}')
    assert read(path)[0].meta["corpus_id"] == "c"  # the default reader keeps it as any other key
    assert "field 'corpus_id' is reserved for the reader with duplicate_ids='position'" in error_for(
        path, duplicate_ids="position"
    )


@pytest.mark.parametrize(
    ("lines", "line", "other", "kept"),
    [
        (['{"id": "a", "contents": "x"}', '{"_id": "b", "contents": "y"}'], 2, "_id", "id"),
        (['{"_id": "a", "text": "x"}', '{"id": "b", "text": "y"}'], 2, "id", "_id"),
    ],
    ids=["ultrarag-then-beir", "beir-then-ultrarag"],
)
def test_a_corpus_mixing_id_fields_is_refused_naming_the_line(
    tmp_path: Path, lines: list[str], line: int, other: str, kept: str
) -> None:
    """Before, the line with the other id field was indexed under its line number, its own id lost in meta."""
    message = error_for(write_lines(tmp_path, *lines))
    assert f"line {line}" in message
    assert f"id in '{other}', but this corpus's ids are in '{kept}'" in message


def test_lines_without_any_id_still_take_their_line_number(tmp_path: Path) -> None:
    docs = read(write_lines(tmp_path, '{"id": "a", "contents": "x"}', '{"contents": "y"}'))
    assert [doc.id for doc in docs] == ["a", "2"]
