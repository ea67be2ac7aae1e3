"""Which FAISS index holds a dense part: exact ``flat`` (the default) or approximate ``hnsw`` for large corpora.

Flat compares a query with every vector: exact, no build cost, but its time per query grows with the corpus
(~100 ms at 200,000 384-d vectors on a busy 2-core machine, ~5x that at a million). HNSW walks a graph: under a
millisecond per query at a million vectors, at the price of a build that takes minutes (about 1,200 CPU-seconds
at a million vectors with the defaults), about 20 % more memory for the vectors, and recall below 1
(``benchmarks/bench_scale_dense.py`` measures all of it). The defaults are the setting that benchmark picked for
large corpora: M=32, efConstruction=128, efSearch=64 gave recall@10 0.999 at 1M clustered vectors, where
efConstruction=64 needed efSearch=128 for 0.979 and M=16/efConstruction=40 never reached 0.82.

``needle index --index-type hnsw [--hnsw-m M] [--ef-construction N] [--ef-search N]`` records the choice in the
generation's manifest; searches (``needle search``, ``needle serve``) open the FAISS store with it, so an HNSW
index is searched exactly like a flat one.
"""

from dataclasses import asdict, dataclass
from typing import Any

from needle_retrieval.errors import NeedleError

INDEX_TYPES = ("flat", "hnsw")
# Allowed ranges, as the CLI flags state them. M: graph neighbours per vector (FAISS needs >= 2);
# efConstruction / efSearch: candidate list sizes while building / searching.
RANGES = {"hnsw_m": (2, 256), "ef_construction": (8, 4096), "ef_search": (1, 4096)}
FLAGS = {"hnsw_m": "--hnsw-m", "ef_construction": "--ef-construction", "ef_search": "--ef-search"}


@dataclass(frozen=True)
class DenseIndexType:
    """A dense part's FAISS index: ``kind`` flat or hnsw; the HNSW settings apply to hnsw only."""

    kind: str = "flat"
    hnsw_m: int = 32
    ef_construction: int = 128
    ef_search: int = 64

    def __post_init__(self) -> None:
        if self.kind not in INDEX_TYPES:
            raise NeedleError(f"--index-type must be one of {', '.join(INDEX_TYPES)}, got {self.kind!r}")
        for name, (low, high) in RANGES.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise NeedleError(f"{FLAGS[name]} must be an integer in [{low}, {high}], got {value!r}")

    @classmethod
    def from_flags(
        cls, kind: str, hnsw_m: int | None, ef_construction: int | None, ef_search: int | None
    ) -> "DenseIndexType":
        """The choice the CLI flags make; HNSW settings without ``--index-type hnsw`` are refused, naming them."""
        given = {"hnsw_m": hnsw_m, "ef_construction": ef_construction, "ef_search": ef_search}
        settings = {name: value for name, value in given.items() if value is not None}
        if settings and kind != "hnsw":
            flags = ", ".join(FLAGS[name] for name in settings)
            raise NeedleError(f"{flags} only apply to --index-type hnsw (this build is --index-type {kind})")
        return cls(kind, **settings)

    def factory(self) -> str:
        """The FAISS factory string of FAISSDocumentStore's ``index_factory``."""
        return f"HNSW{self.hnsw_m}" if self.kind == "hnsw" else "Flat"

    def search_params(self) -> dict[str, float] | None:
        """FAISSDocumentStore's ``search_params``: efConstruction applies to the build, efSearch to searches."""
        if self.kind != "hnsw":
            return None
        return {"efConstruction": self.ef_construction, "efSearch": self.ef_search}

    def recorded(self) -> dict[str, Any] | None:
        """What the manifest records: None for flat (manifests from before index types are flat), else all."""
        return asdict(self) if self.kind != "flat" else None

    @classmethod
    def from_recorded(cls, recorded: Any) -> "DenseIndexType":
        """Read ``recorded`` back; None (older manifests) is flat. Raises NeedleError naming a bad field."""
        if recorded is None:
            return FLAT
        if not isinstance(recorded, dict) or set(recorded) != {"kind", *RANGES}:
            raise NeedleError(f"dense_index must name kind, {', '.join(RANGES)}; got {recorded!r}"[:300])
        return cls(**recorded)


FLAT = DenseIndexType()  # the default: exact search


def check_index_type_options(choice: DenseIndexType, *, store: str, dense: bool, multimodal: bool) -> None:
    """Refuse ``--index-type hnsw`` where no FAISS dense part is built, naming the flag that conflicts."""
    if choice.kind == "flat":
        return
    if not dense:
        raise NeedleError("--index-type hnsw indexes the dense part; it cannot go with --no-dense")
    if store != "faiss":
        raise NeedleError(f"--index-type hnsw is for --store faiss (--store {store} chooses its own index)")
    if multimodal:
        raise NeedleError("--index-type hnsw is not available with --multimodal (image indexes are flat)")
