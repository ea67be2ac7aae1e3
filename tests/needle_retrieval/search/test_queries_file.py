"""Queries files of `needle search --queries` (``needle_retrieval.search.queries_file``): every accepted format is read
as a Pyserini user has it on disk, and every bad file is one line naming the file, the line and the field."""

import json
import os
from pathlib import Path

import pytest

from needle_retrieval.errors import NeedleError
from needle_retrieval.search.queries_file import Query, read_queries

TREC_TOPICS = """<top>
<num> Number: 301
<title> International Organized Crime

<desc> Description:
Identify organizations that participate in international criminal activity.

<narr> Narrative:
A relevant document must name an organization.
</top>

<top lang='en'>
<num>302</num>
<title>
Poliomyelitis and Post-Polio
</title>
<desc> Is the disease making a comeback?
<narr> Relevant documents say so.
</top>
"""


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_beir_queries_jsonl_is_read_in_file_order(tmp_path: Path) -> None:
    lines = [{"_id": "q2", "text": "second first", "metadata": {}}, {"_id": 7, "text": "an integer id"}]
    path = write(tmp_path, "queries.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    assert read_queries(path) == [Query("q2", "second first", 1), Query("7", "an integer id", 2)]


def test_pyserini_jsonl_topics_and_tsv_topics(tmp_path: Path) -> None:
    jsonl = write(tmp_path, "topics.jsonl", '{"id": "t1", "title": "a title"}\n{"qid": "t2", "query": "a query"}\n')
    assert [(q.qid, q.text) for q in read_queries(jsonl)] == [("t1", "a title"), ("t2", "a query")]
    tsv = write(tmp_path, "queries.dev.tsv", "1048585\twhat is paula deen's brother\n2\tAndorra\n\n")
    expected = [("1048585", "what is paula deen's brother"), ("2", "Andorra")]
    assert [(q.qid, q.text) for q in read_queries(tsv)] == expected


def test_trec_topics_search_their_titles_whatever_the_extension(tmp_path: Path) -> None:
    for name in ("topics.robust04.txt", "topics.trec", "topics"):
        queries = read_queries(write(tmp_path, name, TREC_TOPICS))
        assert queries == [
            Query("301", "International Organized Crime", 2),
            Query("302", "Poliomyelitis and Post-Polio", 13),
        ]


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("q.jsonl", '{"_id": "q1", "text": "fine"}\n{"_id": "q2"}\n', "line 2: no field 'text' or 'query' or 'title'"),
        ("q.jsonl", '{"text": "no id"}\n', "line 1: no field '_id' or 'qid' or 'id'"),
        ("q.jsonl", '{"_id": "q1", "text": "fine"}\n{"_id": "q2", "text": "  "}\n', "line 2: field 'text' is empty"),
        ("q.jsonl", '{"_id": "q1", "text": 3}\n', "line 1: field 'text' must be a string, got int"),
        ("q.jsonl", '{"_id": "q1", "text": "x"}\n{"_id": "q1"\n', "line 2: invalid JSON"),
        ("q.jsonl", '{"_id": "a b", "text": "x"}\n', "line 1: query id 'a b' must be a non-empty string without"),
        ("q.jsonl", '{"_id": true, "text": "x"}\n', "line 1: query id True must be"),
        ("q.tsv", "q1\tfine\nq2\tone\ttoo many\n", "line 2: expected 2 tab-separated fields (qid, text), got 3"),
        ("q.tsv", "q1\tfine\nq2\t\n", "line 2: the text (field 2) is empty"),
        ("q.tsv", "q1\tone\nq2\ttwo\nq1\tagain\n", "line 3: duplicate query id 'q1' (first on line 1)"),
        ("q.txt", "<top>\n<num> Number: 1\n<desc> no title\n</top>\n", "line 1: the topic has no <title>"),
        ("q.txt", "<top>\n<title> no number\n</top>\n", "line 1: the topic has no <num>"),
        ("q.txt", "<top>\n<num> 1\n<title>\n<desc> empty title\n</top>\n", "line 3: <title> is empty"),
        ("q.txt", "<top>\n<num> 1\n<title> open\n", "line 1: the topic has no </top>"),
        ("q.txt", "<top>\n<num> 1\n<top>\n", "line 3: <top> before the </top> of the topic on line 1"),
        ("q.txt", "one query a line\nwithout ids\n", "not a queries file this reads; expected a BEIR queries.jsonl"),
        ("q.json", '{"1": {"title": "x"}}', "a .json topics file (one object of all topics) is not read"),
        ("q.tsv", "", "no queries; expected a BEIR queries.jsonl"),
        ("q.tsv", "\topen a file\nq2\tclose it\n", "line 1: query id '' must be a non-empty string"),
        (
            "q.tsv",
            "1\x00\topen\n",
            "line 1: query id '1\\x00' must be a non-empty string without whitespace or control",
        ),
    ],
)
def test_a_bad_queries_file_is_one_line_naming_file_line_and_field(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(NeedleError) as error:
        read_queries(path)
    message = str(error.value)
    assert message.startswith(str(path)), message
    assert expected in message, message
    assert "\n" not in message


def test_bad_bytes_and_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(NeedleError, match=r"q\.tsv, line 2: not valid UTF-8 \(byte 0xff at column 4\)"):
        read_queries(write(tmp_path, "q.tsv", b"q1\tok\nq2\t\xff\n"))
    with pytest.raises(NeedleError, match=r"cannot read queries file .*missing\.tsv: No such file"):
        read_queries(tmp_path / "missing.tsv")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("q1\tcalendar\nq2\tzip archives\n", [Query("q1", "calendar", 1), Query("q2", "zip archives", 2)]),
        ('{"_id": "q1", "text": "calendar"}\n', [Query("q1", "calendar", 1)]),
        ("<top>\n<num> Number: 7\n<title> calendar\n</top>\n", [Query("7", "calendar", 2)]),
    ],
    ids=["tsv", "jsonl", "trec"],
)
def test_a_pipe_is_read_once_and_whole(text: str, expected: list[Query]) -> None:
    """`--queries <(printf ...)` or /dev/stdin from a pipe: the format is told from the bytes that are then read
    (before, the sniff consumed the pipe and an empty run came out with exit 0)."""
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as writer:
        writer.write(text.encode())
    try:
        assert read_queries(Path(f"/dev/fd/{read_end}")) == expected
    finally:
        os.close(read_end)


def test_an_endless_file_is_refused_at_the_size_cap() -> None:
    """/dev/zero as the queries file: one line naming it, not a MemoryError."""
    with pytest.raises(NeedleError, match=r"^/dev/zero: larger than 268,435,456 bytes"):
        read_queries(Path("/dev/zero"))
