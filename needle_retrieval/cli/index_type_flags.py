"""`needle index --index-type` and the settings of each FAISS index type (``needle_retrieval.index.dense_type``).

In a module of its own so that the index types and their flags change in one place, beside the parser.
``index_type_of`` turns parsed flags into the choice; ``add_search_time_flags`` / ``search_time_of`` are the
``--nprobe`` / ``--ef-search`` overrides a search command can offer (they change no index).
"""

import argparse

from needle_retrieval.cli.options import int_in
from needle_retrieval.index.dense_type import FLAGS, INDEX_TYPES, RANGES, DenseIndexType

SETTING_NAMES = tuple(RANGES)  # every setting flag, as the argparse destination it fills


def add_index_type_flags(ix: argparse.ArgumentParser) -> None:
    """`needle index --index-type TYPE` and every type's settings (``needle_retrieval.index.dense_type``)."""
    default = DenseIndexType()
    ix.add_argument(
        "--index-type",
        default="flat",
        choices=INDEX_TYPES,
        help="FAISS index of the dense part: flat (default) is exact, its query time grows with the corpus; "
        f"hnsw is approximate (recall@10 >= 0.95 at the defaults M={default.hnsw_m}, efConstruction="
        f"{default.ef_construction}, efSearch={default.ef_search}), under a ms per query at a million vectors, "
        "but its build takes minutes there and about 20%% more memory for the vectors. Compressed: sq8 (one byte "
        "per value, a quarter of flat's memory), hnsw-sq8 (HNSW over SQ8), ivf-flat (k-means lists, --nlist / "
        "--nprobe), ivf-sq8 (IVF lists of SQ8 codes: ivf-flat's speed in sq8's memory), ivf-pq (lists of --pq-m byte "
        "codes); see docs/guides/compressed-indexes.md",
    )
    helps = {
        "hnsw_m": f"hnsw, hnsw-sq8: graph neighbours per vector (default {default.hnsw_m}); more = better recall, "
        "more memory",
        "ef_construction": f"hnsw, hnsw-sq8: candidates while building (default {default.ef_construction}); more = "
        "slower build, better graph",
        "ef_search": f"hnsw, hnsw-sq8: candidates per query (default {default.ef_search}); more = better recall, "
        "slower queries",
        "nlist": "ivf-flat, ivf-sq8, ivf-pq: k-means lists (default: sqrt(documents), at most the training "
        "sample / 39; the sample is the corpus's first --chunk-size documents)",
        "nprobe": f"ivf-flat, ivf-sq8, ivf-pq: lists scanned per query (default {default.nprobe}, at most "
        "--nlist); more = better recall, slower queries",
        "pq_m": f"ivf-pq: bytes per vector (default {default.pq_m}); must divide the embedding dimension",
    }
    for name in SETTING_NAMES:
        low, high = RANGES[name]
        ix.add_argument(FLAGS[name], type=int_in(low, high), metavar="N", help=f"{helps[name]}; {low}-{high}")


def index_type_of(args: argparse.Namespace) -> DenseIndexType:
    """The index type `needle index`'s parsed ARGS choose; a setting of another type is refused (NeedleError)."""
    return DenseIndexType.from_flags(args.index_type, **{name: getattr(args, name) for name in SETTING_NAMES})


def add_search_time_flags(se: argparse.ArgumentParser) -> None:
    """`--nprobe N` / `--ef-search N` for a search: override the index's recorded setting for this run only."""
    for name, types in (("nprobe", "ivf-flat, ivf-sq8 and ivf-pq"), ("ef_search", "hnsw and hnsw-sq8")):
        low, high = RANGES[name]
        se.add_argument(
            FLAGS[name],
            type=int_in(low, high),
            metavar="N",
            help=f"{types} indexes: {name} for this search instead of the index's own; {low}-{high}",
        )


def search_time_of(args: argparse.Namespace, recorded: DenseIndexType) -> DenseIndexType:
    """RECORDED (the index's type) with the search-time flags of ARGS; a flag its type lacks is refused."""
    return recorded.with_search(nprobe=getattr(args, "nprobe", None), ef_search=getattr(args, "ef_search", None))
