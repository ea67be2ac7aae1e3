"""Reproducible clustered unit vectors for the dense scale benchmark, written as float32 ``.npy`` files.

Uniform random vectors are the worst case for HNSW (every neighbour is about as far as every other, so recall
says little about real embeddings); sentence embeddings are clustered. Here ``centres`` Gaussian cluster centres
are drawn on the unit sphere, each point is a centre plus isotropic noise, and every vector is L2-normalised, so
inner product is cosine similarity. Queries are drawn the same way (a random centre plus fresh noise): near corpus
points but never equal to one. Everything is seeded: the same arguments give the same bytes.

The corpus is written in chunks into a memory-mapped ``.npy`` (``np.lib.format.open_memmap``), so 1M x 384
(1.5 GB) never needs a second copy in memory::

    python benchmarks/synthetic_vectors.py --n 1000000 --dim 384 --out /tmp/v.npy [--queries 1000]

writes /tmp/v.npy and, with ``--queries``, /tmp/v.queries.npy.
"""

import argparse
from pathlib import Path

import numpy as np

CHUNK = 50_000  # rows generated per step: bounds temporary memory to CHUNK x dim float32 (~77 MB at 384)
NOISE = 0.9  # noise norm relative to the unit centre; chosen so neighbours are close but not duplicates


def centres(count: int, dim: int, seed: int) -> np.ndarray:
    """``count`` cluster centres on the unit sphere (float32, rows L2-normalised)."""
    points = np.random.default_rng([seed, 0]).standard_normal((count, dim)).astype(np.float32)
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def clustered(rng: np.random.Generator, count: int, centre_points: np.ndarray) -> np.ndarray:
    """``count`` unit vectors, each a random centre plus Gaussian noise of expected norm NOISE."""
    dim = centre_points.shape[1]
    chosen = centre_points[rng.integers(0, len(centre_points), size=count)]
    noise = rng.standard_normal((count, dim), dtype=np.float32) * np.float32(NOISE / np.sqrt(dim))
    points = chosen + noise
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points


def write_corpus(out: Path, n: int, dim: int, clusters: int, seed: int) -> Path:
    """Write an (n, dim) float32 ``.npy`` of clustered unit vectors to OUT, CHUNK rows at a time."""
    if n < 1 or dim < 1 or clusters < 1:
        raise ValueError(f"--n, --dim and --clusters must be >= 1, got {n}, {dim}, {clusters}")
    centre_points = centres(clusters, dim, seed)
    matrix = np.lib.format.open_memmap(out, mode="w+", dtype=np.float32, shape=(n, dim))
    for number, start in enumerate(range(0, n, CHUNK)):
        rng = np.random.default_rng([seed, 1, number])  # per chunk: chunks are independent of each other
        matrix[start : start + CHUNK] = clustered(rng, min(CHUNK, n - start), centre_points)
    matrix.flush()
    del matrix
    return out


def make_queries(count: int, dim: int, clusters: int, seed: int) -> np.ndarray:
    """``count`` query vectors drawn like the corpus (same centres, fresh noise)."""
    return clustered(np.random.default_rng([seed, 2]), count, centres(clusters, dim, seed))


def queries_path(corpus: Path) -> Path:
    """Where ``--queries`` puts the query vectors of CORPUS: ``NAME.queries.npy`` beside it."""
    return corpus.with_name(corpus.name.removesuffix(".npy") + ".queries.npy")


def default_clusters(n: int) -> int:
    """About one cluster per 300 points, between 8 and 4,000 (a few thousand at 1M)."""
    return int(min(4000, max(8, n // 300)))


def main() -> None:
    """Command line: write the corpus (and queries) and say where."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, required=True, help="corpus vectors")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--out", type=Path, required=True, help="the corpus .npy to write")
    parser.add_argument("--clusters", type=int, help="cluster centres (default: n / 300, 8 to 4,000)")
    parser.add_argument("--queries", type=int, default=0, help="also write this many queries to NAME.queries.npy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    clusters = args.clusters or default_clusters(args.n)
    write_corpus(args.out, args.n, args.dim, clusters, args.seed)
    print(f"wrote {args.out}: {args.n:,} x {args.dim} float32, {clusters:,} clusters, seed {args.seed}")
    if args.queries:
        np.save(queries_path(args.out), make_queries(args.queries, args.dim, clusters, args.seed))
        print(f"wrote {queries_path(args.out)}: {args.queries:,} queries")


if __name__ == "__main__":
    main()
