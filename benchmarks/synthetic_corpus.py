"""A reproducible synthetic text corpus for scale benchmarks: Zipf words, MS MARCO-like passage lengths.

Why: SciFact has 5,183 passages; measuring BM25 (and dense) indexing at 1M passages needs a corpus of that
size that anyone can regenerate bit for bit, with a word distribution like real text (a few very common words,
a long tail) so posting lists have realistic lengths. Everything is vectorised numpy: 1M passages take seconds.

- Vocabulary: ``VOCABULARY`` pseudo-words built from consonant-vowel syllables (the 100 most frequent ranks
  get one syllable, the next 10,000 two, the rest three: common words are short, like in real text). The
  words are fixed; the seed only changes which are drawn.
- Words: Zipf-distributed ranks, P(rank k) ~ 1 / k ** ``EXPONENT``.
- Lengths: lognormal, mean ~``MEAN_WORDS`` words, clipped to [``MIN_WORDS``, ``MAX_WORDS``]; titles 2-5 words.
- Passages are made in chunks of ``CHUNK`` with their own seeded generator, so passage ``i`` is the same
  whatever ``n`` is (a 50k corpus is the first 50k passages of the 1M one) and queries can find their source.

Lines are ``{"id": "<i>", "title": ..., "contents": ...}`` (UltraRAG corpus JSONL, as ``needle index`` reads).

    python benchmarks/synthetic_corpus.py --passages 1000000 --out /tmp/corpus.jsonl --seed 0 [--queries Q.txt]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import numpy as np

VOCABULARY = 100_000
EXPONENT = 1.1
MEAN_WORDS = 70.0
SIGMA = 0.5
MIN_WORDS, MAX_WORDS = 5, 400
CHUNK = 10_000
QUERY_SKIP_RANKS = 100  # query words come from the passage but skip the most common ranks (stopword-like)
_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwxz" for v in "aeiou"] + ["ka", "ry", "ty", "qu", "sy"]


@cache
def _vocabulary() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The word bytes (each followed by a space), each word's start and length there, and the Zipf CDF."""
    base = len(_SYLLABLES)
    words = []
    for rank in range(VOCABULARY):
        digits, rest = [], rank if rank < base else rank - base
        syllables = 1 if rank < base else 2 if rest < base * base else 3
        if syllables == 3:
            rest -= base * base
        for _ in range(syllables):
            rest, digit = divmod(rest, base)
            digits.append(_SYLLABLES[digit])
        words.append("".join(digits) + " ")
    encoded = [w.encode("ascii") for w in words]
    lengths = np.fromiter((len(w) for w in encoded), dtype=np.int64, count=len(encoded))
    starts = np.cumsum(lengths) - lengths
    blob = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    weights = 1.0 / np.arange(1, VOCABULARY + 1, dtype=np.float64) ** EXPONENT
    return blob, starts, lengths, np.cumsum(weights / weights.sum())


def _texts(ranks: np.ndarray, lengths: np.ndarray) -> list[str]:
    """Join ``ranks`` into texts of ``lengths`` words each, in one gather over the vocabulary bytes."""
    blob, starts, sizes, _ = _vocabulary()
    seg = sizes[ranks]
    out_start = np.cumsum(seg) - seg
    index = np.arange(int(seg.sum()), dtype=np.int64) - np.repeat(out_start - starts[ranks], seg)
    raw = blob[index]
    last = np.cumsum(lengths) - 1  # each text's last word: its trailing space becomes the separator
    raw[out_start[last] + seg[last] - 1] = ord("\n")
    return raw.tobytes().decode("ascii").split("\n")[:-1]


def _chunk_ranks(chunk: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Word ranks and word counts of the ``CHUNK`` passages (contents, then titles) of chunk ``chunk``."""
    rng = np.random.default_rng([seed, chunk])
    mu = np.log(MEAN_WORDS) - SIGMA**2 / 2
    lengths = np.clip(np.rint(rng.lognormal(mu, SIGMA, CHUNK)), MIN_WORDS, MAX_WORDS).astype(np.int64)
    title_lengths = rng.integers(2, 6, CHUNK)
    cdf = _vocabulary()[3]
    draw = rng.random(int(lengths.sum() + title_lengths.sum()))
    ranks = np.minimum(np.searchsorted(cdf, draw), VOCABULARY - 1)
    return ranks[: lengths.sum()], lengths, ranks[lengths.sum() :], title_lengths


def _chunk(chunk: int, seed: int) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Contents and titles of one chunk, and the contents' ranks and lengths (for queries)."""
    ranks, lengths, title_ranks, title_lengths = _chunk_ranks(chunk, seed)
    return _texts(ranks, lengths), _texts(title_ranks, title_lengths), ranks, lengths


def passages(n: int, seed: int = 0) -> Iterator[dict[str, str]]:
    """The first ``n`` passages of the corpus for ``seed``: dicts ``{"id", "title", "contents"}``."""
    if n < 0:
        raise ValueError(f"n must be >= 0; got {n}")
    for chunk in range(-(-n // CHUNK)):
        contents, titles, _, _ = _chunk(chunk, seed)
        first = chunk * CHUNK
        for i in range(min(CHUNK, n - first)):
            yield {"id": str(first + i), "title": titles[i], "contents": contents[i]}


def write_corpus(path: str | Path, n: int, seed: int = 0) -> Path:
    """Write ``n`` passages as corpus JSONL to ``path`` (words are ASCII letters: no JSON escaping needed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="ascii") as f:
        for chunk in range(-(-n // CHUNK)):
            contents, titles, _, _ = _chunk(chunk, seed)
            first, count = chunk * CHUNK, min(CHUNK, n - chunk * CHUNK)
            f.write(
                "".join(
                    f'{{"id": "{first + i}", "title": "{titles[i]}", "contents": "{contents[i]}"}}\n'
                    for i in range(count)
                )
            )
    return path


def queries(n: int, seed: int = 0, corpus_size: int = 1_000_000, words: tuple[int, int] = (2, 5)) -> list[str]:
    """``n`` queries, each 2-5 words of one random passage among the first ``corpus_size`` (not its commonest).

    The query generator has its own stream (``seed`` + 1,000,003), so the queries of seed 0 do not repeat
    passage 0's words; the same ``seed`` and ``corpus_size`` always give the same queries.
    """
    rng = np.random.default_rng([seed, 1_000_003])
    sources = rng.integers(0, corpus_size, n)
    sizes = rng.integers(words[0], words[1] + 1, n)
    out: list[str] = [""] * n
    for chunk in np.unique(sources // CHUNK):
        ranks, lengths = _chunk_ranks(int(chunk), seed)[:2]
        offsets = np.cumsum(lengths) - lengths
        for q in np.flatnonzero(sources // CHUNK == chunk):
            local = int(sources[q] % CHUNK)
            own = ranks[offsets[local] : offsets[local] + lengths[local]]
            rare = own[own >= QUERY_SKIP_RANKS]
            pool = rare if len(rare) >= sizes[q] else own
            picked = rng.choice(pool, size=min(int(sizes[q]), len(pool)), replace=False)
            out[q] = _texts(picked, np.array([len(picked)]))[0]
    return out


def main() -> None:
    """CLI: write the corpus (and optionally queries, one a line) and say how long it took."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", type=Path, help="also write this many queries here (see --n-queries)")
    parser.add_argument("--n-queries", type=int, default=1000)
    args = parser.parse_args()
    start = time.perf_counter()
    write_corpus(args.out, args.passages, args.seed)
    print(f"{args.passages:,} passages -> {args.out} in {time.perf_counter() - start:.1f} s")
    if args.queries:
        lines = queries(args.n_queries, args.seed, corpus_size=max(args.passages, 1))
        args.queries.write_text("".join(q + "\n" for q in lines), encoding="ascii")
        print(f"{len(lines):,} queries -> {args.queries}")


if __name__ == "__main__":
    main()
