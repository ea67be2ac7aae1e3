"""Batch runs, as Pyserini's ``--topics FILE --output run.trec``: read a queries file, search it, write a run.

`needle search DIR --queries FILE [--output RUN] [--run-tag T]` reads every query first (a bad file is one line
naming the file, the line and the field, before any model loads), searches them ``QUERY_BATCH`` (or ``--batch-size``) at
a time through ``Searcher.search`` and writes what each query got, with the retrieval scores. The formats of a
queries file and their rules are ``needle_retrieval.search.queries_file``'s.

The run is a TREC run (``qid Q0 docid rank score tag``, what trec_eval and pytrec_eval read), or, for an output
named ``*.jsonl`` (or ``--json`` without ``--output``; ``--json`` with ``--output`` is refused, the file's name
picks the format), one JSON object a query::

    {"qid": "1", "hits": [{"id": "d7", "score": 12.5, "rank": 1}, ...]}

Ranks start at 1 in the order the pipeline returned; a doc id repeated in one answer keeps its first, best place.
Scores are the retrieval's, written exactly (Python's shortest round-trip form), except where trec_eval would not
read one strictly below the score before it: trec_eval and pytrec_eval hold scores as 32-bit floats and order tied
ones by doc id, descending, so a run with ties would be scored in another order than the one `needle eval` scores
and `needle search` prints (SciFact rrf: 0.7139 nDCG@10 instead of 0.7185). Such a score is written as the next
32-bit float below the one before (``needle_retrieval.search.trec_scores``): every tool reads the ranks as written.
A query without hits has no TREC line and ``"hits": []``. An output file is
written through a temporary sibling and renamed into place only once every query is done, so a failed run
leaves no file (or the old one); without ``--output`` the lines go to stdout as each batch is answered. A run
has ``RUN_DEPTH`` hits a query (`needle eval`'s) unless ``--top-k`` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from components.atomic_files import atomic_write
from needle_retrieval.defaults import QUERY_BATCH
from needle_retrieval.errors import NeedleError
from needle_retrieval.progress import Progress
from needle_retrieval.search.queries_file import Query, read_queries
from needle_retrieval.search.trec_scores import written_score

if TYPE_CHECKING:
    from haystack import Document

    from needle_retrieval.search.searcher import Searcher


Ranking = list[tuple[str, Any]]  # (doc id, score) best first, as the retrieval returned them


def run_label(mode: str, store: str) -> str:
    """The run's name for MODE over STORE, as `needle eval` labels its results: ``bm25``, ``milvus-hybrid``."""
    return mode if store == "faiss" else f"{store}-{mode}"


def run_format(output: Path | None, as_json: bool) -> str:
    """``jsonl`` for an output named ``*.jsonl``, or for --json on stdout; ``trec`` for any other."""
    jsonl = as_json if output is None else output.suffix == ".jsonl"
    return "jsonl" if jsonl else "trec"


def check_output(output: Path, flag: str = "--output") -> None:
    """Refuse a run file (given with FLAG) that is a directory or whose directory is missing or not writable,
    before any search."""
    parent = output.parent
    if output.is_dir():  # (a link to a file is followed, and a FIFO or a device written into: write_run)
        raise NeedleError(f"{flag} {output} is a directory; name a file such as {output / 'run.trec'}")
    if not parent.is_dir():
        raise NeedleError(f"{flag} {output}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise NeedleError(f"{flag} {output}: directory {parent} is not writable")


def check_run_tag(tag: str) -> str:
    """A TREC run tag: one word (it is the run's last column)."""
    if tag.split() != [tag]:
        raise NeedleError(f"--run-tag must be one word without spaces (the run's last column), got {tag!r}")
    return tag


def _hits(qid: str, ranking: Ranking) -> Iterator[tuple[int, str, float]]:
    """(rank, doc id, score) of one answer in the retrieval's order: a repeated doc id keeps its first place; every
    score a finite number, written so that trec_eval reads it below the one before (``written_score``)."""
    seen: set[str] = set()
    written = math.inf
    for doc_id, score in ranking:
        if doc_id in seen:
            continue
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score):
            raise NeedleError(f"query {qid!r}, document {doc_id!r}: a run needs a finite score, got {score!r}")
        seen.add(doc_id)
        written = written_score(float(score), written)
        yield len(seen), doc_id, written


def trec_text(qid: str, ranking: Ranking, tag: str) -> str:
    """One query's lines of a TREC run: ``qid Q0 docid rank score tag``."""
    lines = []
    for rank, doc_id, score in _hits(qid, ranking):
        if doc_id.split() != [doc_id]:
            raise NeedleError(
                f"query {qid!r}: document id {doc_id!r} holds whitespace, which a TREC run cannot; "
                "write the run as JSON lines instead (a file named *.jsonl)"
            )
        lines.append(f"{qid} Q0 {doc_id} {rank} {score!r} {tag}\n")
    return "".join(lines)


def jsonl_text(qid: str, ranking: Ranking) -> str:
    """One query's JSON line: ``{"qid", "hits": [{"id", "score", "rank"}, ...]}``."""
    hits = [{"id": doc_id, "score": score, "rank": rank} for rank, doc_id, score in _hits(qid, ranking)]
    return json.dumps({"qid": qid, "hits": hits}, ensure_ascii=False, allow_nan=False) + "\n"


def write_run(output: Path | None, answers: Iterable[tuple[str, Ranking]], form: str, tag: str) -> None:
    """Write ANSWERS ((qid, ranking) in order, consumed as they come) as FORM (``trec`` or ``jsonl``) to OUTPUT,
    atomically, or to stdout for None."""

    def text(qid: str, ranking: Ranking) -> str:
        return trec_text(qid, ranking, tag) if form == "trec" else jsonl_text(qid, ranking)

    if output is None:
        for qid, ranking in answers:
            sys.stdout.write(text(qid, ranking))
        sys.stdout.flush()
        return

    def write(handle: IO[bytes]) -> None:
        for qid, ranking in answers:
            handle.write(text(qid, ranking).encode("utf-8"))

    target = output.resolve()  # a symbolic link: replace the file it names, never the link
    if target.exists() and not target.is_file():  # a FIFO or a device (/dev/stdout): write into it as it is
        with target.open("wb") as handle:
            write(handle)
        return
    atomic_write(target, write)


def search_in_batches(searcher: Searcher, queries: Sequence[str], batch: int = QUERY_BATCH) -> Iterator[list[Document]]:
    """The hits of every query, in order, searched QUERY_BATCH queries per pipeline run (memory holds one batch's
    intermediate lists, not the whole request's)."""
    for start in range(0, len(queries), batch):
        yield from searcher.search(list(queries[start : start + batch]))


@dataclass(frozen=True)
class BatchRun:
    """A checked `needle search --queries` request: its queries, where the run goes, its format and tag."""

    queries: list[Query]
    output: Path | None
    form: str
    tag: str | None  # None: ``run_label`` of the searcher's mode and store

    @classmethod
    def prepare(cls, queries_file: Path, output: Path | None, tag: str | None, as_json: bool) -> BatchRun:
        """Read the queries and check --output, --run-tag and --json; nothing is searched or written yet."""
        if as_json and output is not None:
            raise NeedleError("--json prints JSON lines to stdout; with --output, the file's name picks the format")
        if output is not None:
            check_output(output)
        checked_tag = None if tag is None else check_run_tag(tag)
        return cls(read_queries(queries_file), output, run_format(output, as_json), checked_tag)

    def answers(self, searcher: Searcher, tag: str, batch: int = QUERY_BATCH) -> Iterator[tuple[str, Ranking]]:
        """(qid, ranking) of every query, searched QUERY_BATCH at a time, with a progress bar on stderr."""
        with Progress(total=len(self.queries), desc=f"searching ({tag})", unit="q") as bar:
            for i in range(0, len(self.queries), batch):
                part = self.queries[i : i + batch]
                for query, docs in zip(part, searcher.search([q.text for q in part]), strict=True):
                    yield query.qid, [(d.id, d.score) for d in docs]
                bar.update(len(part))

    def write(self, searcher: Searcher, batch: int = QUERY_BATCH) -> None:
        """Search every query through SEARCHER and write the run (``write_run``)."""
        tag = self.tag or run_label(searcher.mode, searcher.manifest.store)
        write_run(self.output, self.answers(searcher, tag, batch), self.form, tag)


def batch_run(args: argparse.Namespace) -> BatchRun | None:
    """The checked ``--queries`` run of `needle search` ARGS, read before anything heavy loads; None without
    --queries, where --output and --run-tag are refused. --queries takes the place of QUERY... and of --config."""
    if args.queries_file is None:
        if args.output is not None or args.run_tag is not None:
            raise NeedleError("--output and --run-tag go with --queries FILE")
        return None
    if args.config is not None:
        raise NeedleError("--queries searches the index DIR given first; it does not go with --config")
    if args.queries:
        raise NeedleError(f"give QUERY... or --queries FILE, not both (got QUERY {args.queries[0]!r})")
    output = None if args.output is None else Path(args.output)
    return BatchRun.prepare(Path(args.queries_file), output, args.run_tag, args.json)
