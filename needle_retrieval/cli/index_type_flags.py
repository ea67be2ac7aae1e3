"""`needle index --index-type` and the settings of each FAISS index type (``needle_retrieval.index.dense_type``).

In a module of its own so that the index types and their flags change in one place, beside the parser.
"""

import argparse

from needle_retrieval.cli.options import int_in
from needle_retrieval.index.dense_type import FLAGS, INDEX_TYPES, RANGES, DenseIndexType


def add_index_type_flags(ix: argparse.ArgumentParser) -> None:
    """`needle index --index-type flat|hnsw` and the HNSW settings (``needle_retrieval.index.dense_type``)."""
    default = DenseIndexType()
    ix.add_argument(
        "--index-type",
        default="flat",
        choices=INDEX_TYPES,
        help="FAISS index of the dense part: flat (default) is exact, its query time grows with the corpus; "
        f"hnsw is approximate (recall@10 >= 0.95 at the defaults M={default.hnsw_m}, efConstruction="
        f"{default.ef_construction}, efSearch={default.ef_search}), under a ms per query at a million vectors, "
        "but its build takes minutes there and about 20%% more memory for the vectors",
    )
    helps = {
        "hnsw_m": f"hnsw: graph neighbours per vector (default {default.hnsw_m}); more = better recall, more memory",
        "ef_construction": f"hnsw: candidates while building (default {default.ef_construction}); more = slower "
        "build, better graph",
        "ef_search": f"hnsw: candidates per query (default {default.ef_search}); more = better recall, slower queries",
    }
    for name, text in helps.items():
        low, high = RANGES[name]
        ix.add_argument(FLAGS[name], type=int_in(low, high), metavar="N", help=f"{text}; {low}-{high}")
