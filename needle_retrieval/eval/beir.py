"""Load and validate a labelled retrieval dataset in BEIR format.

A BEIR dataset directory holds three things::

    corpus.jsonl          one JSON object a line: {"_id": str, "title": str, "text": str}
    queries.jsonl         one JSON object a line: {"_id": str, "text": str}
    qrels/<split>.tsv     header "query-id<TAB>corpus-id<TAB>score", then one judgement a line

Only queries that have at least one positive judgement (score > 0) in the split count: ``queries.jsonl``
usually mixes train and test queries, and a query with no relevant document has no defined nDCG.
The corpus stays on disk (``BeirDataset.corpus_path``) and is indexed later by ``needle index``; here it is
read once, streaming, through the corpus reader itself (``iter_corpus``, with the same layout detection), so a
bad corpus line gets exactly the message ``needle index`` would give, and only the ids are kept to check that
every judgement names a real document. BEIR adds one rule: every corpus line has its own ``_id``.
``queries.jsonl`` goes through the same JSONL line reader (``iter_json_objects``).
Every problem is a :class:`DatasetError` whose one-line message names the file, the line and the id.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.converters.jsonl_corpus_reader import iter_corpus
from components.converters.jsonl_lines import CorpusFormatError, iter_json_objects

QRELS_HEADER = ("query-id", "corpus-id", "score")
LAYOUT = "a BEIR dir needs corpus.jsonl, queries.jsonl and qrels/<split>.tsv"


class DatasetError(ValueError):
    """A BEIR dataset directory is missing a file or holds a malformed or inconsistent line."""


@dataclass(frozen=True)
class BeirDataset:
    """A validated BEIR split: the queries to run and their relevance judgements.

    ``queries`` keeps the order of ``queries.jsonl`` and holds only the judged queries of ``split``;
    ``qrels`` maps query id -> {corpus id: graded relevance} (zero grades kept, they are judged
    non-relevant); ``skipped_queries`` lists judged queries that have no positive judgement.
    """

    name: str
    path: Path
    split: str
    corpus_path: Path
    n_docs: int
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    skipped_queries: list[str] = field(default_factory=list)


def load_beir(dataset_dir: str | Path, split: str = "test") -> BeirDataset:
    """Read and cross-check a BEIR dataset directory; raise :class:`DatasetError` on the first problem."""
    root = Path(dataset_dir)
    corpus_path, queries_path, qrels_path = _required_files(root, split)
    doc_ids = _read_corpus_ids(corpus_path)
    all_queries = _read_queries(queries_path)
    qrels = _read_qrels(qrels_path, doc_ids, all_queries)
    judged = {qid: docs for qid, docs in qrels.items() if any(score > 0 for score in docs.values())}
    return BeirDataset(
        name=root.resolve().name,
        path=root,
        split=split,
        corpus_path=corpus_path,
        n_docs=len(doc_ids),
        queries={qid: text for qid, text in all_queries.items() if qid in judged},
        qrels=judged,
        skipped_queries=[qid for qid in qrels if qid not in judged],
    )


def _required_files(root: Path, split: str) -> tuple[Path, Path, Path]:
    """Return the three paths of a BEIR split, or say which one is missing and what a BEIR dir holds."""
    if not root.is_dir():
        raise DatasetError(f"BEIR dataset dir {root} does not exist or is not a directory; {LAYOUT}")
    paths = (root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv")
    for path in paths:
        if not path.is_file():
            splits = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
            found = f" (qrels splits found: {', '.join(splits) or 'none'})" if path == paths[2] else ""
            raise DatasetError(f"BEIR dataset dir {root} is missing {path.relative_to(root)}{found}; {LAYOUT}")
    return paths


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line, under the project's one set of JSONL line rules."""
    try:
        yield from iter_json_objects(path)
    except CorpusFormatError as error:
        raise DatasetError(str(error)) from None


def _read_corpus_ids(path: Path) -> set[str]:
    """The ids of corpus.jsonl, read by the corpus reader ``needle index`` uses, with BEIR's ``_id`` required."""
    try:
        return {document.id for document in iter_corpus(path, id_field="_id", require_id=True)}
    except CorpusFormatError as error:
        raise DatasetError(str(error)) from None


def _read_queries(path: Path) -> dict[str, str]:
    """Map each query's ``_id`` to its ``text``; ids must be unique non-empty strings, texts strings."""
    rows: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for number, obj in _json_lines(path):
        query_id, text = obj.get("_id"), obj.get("text")
        if not isinstance(query_id, str) or not query_id:
            raise DatasetError(f"{path}, line {number}: field '_id' must be a non-empty string, got {query_id!r}")
        if query_id in rows:
            raise DatasetError(
                f"{path}, line {number}: duplicate _id {query_id!r} (first on line {first_line[query_id]})"
            )
        if not isinstance(text, str):
            raise DatasetError(f"{path}, line {number}: field 'text' must be a string, got {text!r}")
        rows[query_id] = text
        first_line[query_id] = number
    return rows


def _read_qrels(path: Path, doc_ids: set[str], queries: dict[str, str]) -> dict[str, dict[str, int]]:
    """Parse a qrels TSV (optional BEIR header) and check every id against the corpus and the queries."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if number == 1 and tuple(fields) == QRELS_HEADER:
                continue
            if fields == [""]:
                continue
            query_id, doc_id, score = _parse_qrels_line(path, number, fields)
            if query_id not in queries:
                raise DatasetError(f"{path}, line {number}: query-id {query_id!r} is not in queries.jsonl")
            if doc_id not in doc_ids:
                raise DatasetError(f"{path}, line {number}: corpus-id {doc_id!r} is not in corpus.jsonl")
            judged = qrels.setdefault(query_id, {})
            if doc_id in judged:
                raise DatasetError(f"{path}, line {number}: duplicate judgement for query {query_id!r}, doc {doc_id!r}")
            judged[doc_id] = score
    if not qrels:
        raise DatasetError(f"{path}: no judgements; expected header {'<TAB>'.join(QRELS_HEADER)} then one line each")
    return qrels


def _parse_qrels_line(path: Path, number: int, fields: list[str]) -> tuple[str, str, int]:
    """Split one judgement line into (query id, corpus id, integer score >= 0)."""
    if len(fields) != 3:
        raise DatasetError(
            f"{path}, line {number}: expected 3 tab-separated fields (query-id, corpus-id, score), got {len(fields)}"
        )
    query_id, doc_id, raw_score = fields
    if not query_id or not doc_id:
        raise DatasetError(f"{path}, line {number}: empty query-id or corpus-id")
    try:
        score = int(raw_score)
    except ValueError:
        hint = " (a header line is only allowed as line 1: query-id, corpus-id, score)" if number == 1 else ""
        raise DatasetError(f"{path}, line {number}: score {raw_score!r} must be an integer >= 0{hint}") from None
    if score < 0:
        raise DatasetError(f"{path}, line {number}: score {score} must be an integer >= 0")
    return query_id, doc_id, score
