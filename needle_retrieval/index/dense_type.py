"""Which FAISS index holds a dense part: exact ``flat`` (the default), graph ``hnsw``, or a compressed one.

Flat compares a query with every vector: exact, no build cost, but its time per query grows with the corpus
(~100 ms at 200,000 384-d vectors on a busy 2-core machine, ~5x that at a million). HNSW walks a graph: under a
millisecond per query at a million vectors, at the price of a build that takes minutes (about 1,200 CPU-seconds
at a million vectors with the defaults), about 20 % more memory for the vectors, and recall below 1
(``benchmarks/bench_scale_dense.py`` measures all of it). The HNSW defaults are the setting that benchmark picked
for large corpora: M=32, efConstruction=128, efSearch=64 gave recall@10 0.999 at 1M clustered vectors.

The compressed types (``docs/guides/compressed-indexes.md`` has their measured recall, speed and memory):

- ``sq8``: every value stored in one byte (a quarter of flat's memory), searched exhaustively.
- ``hnsw-sq8``: the HNSW graph over SQ8 codes: HNSW's speed at about a third of its memory.
- ``ivf-flat``: the vectors split into ``nlist`` k-means lists; a query scans the ``nprobe`` nearest lists.
- ``ivf-sq8``: IVF lists of SQ8 codes: IVF's speed in a quarter of flat's memory (IVF keeps its own ids, so no id
  map is added either).
- ``ivf-pq``: IVF lists of product-quantisation codes, ``pq_m`` bytes per vector (64 bytes for 1,536 at 384-d).

IVF and PQ are trained (k-means) on a sample: the vectors of the first write that holds enough of them, which in
``needle index`` is its first chunk (``--chunk-size``) -- ``fitted`` sizes ``nlist`` to that sample, as FAISS needs
39 training vectors per list (and 39 x 256 for the PQ codebooks). SQ8 trains on the same sample (min / max per
dimension). ``nprobe`` and ``ef_search`` are search-time settings: ``search_params`` gives them to the store, and
``with_search`` overrides them for one search without rebuilding.

``needle index --index-type TYPE [settings]`` records the choice in the generation's manifest (only the settings of
that type); searches (``needle search``, ``needle serve``) open the FAISS store with it.
"""

import math
from dataclasses import dataclass, replace
from typing import Any

from needle_retrieval.errors import NeedleError

INDEX_TYPES = ("flat", "hnsw", "sq8", "hnsw-sq8", "ivf-flat", "ivf-sq8", "ivf-pq")
# The settings each type takes; a setting given to another type is refused, naming it.
HNSW_SETTINGS = ("hnsw_m", "ef_construction", "ef_search")
SETTINGS: dict[str, tuple[str, ...]] = {
    "flat": (),
    "hnsw": HNSW_SETTINGS,
    "sq8": (),
    "hnsw-sq8": HNSW_SETTINGS,
    "ivf-flat": ("nlist", "nprobe"),
    "ivf-sq8": ("nlist", "nprobe"),
    "ivf-pq": ("nlist", "nprobe", "pq_m"),
}
# Allowed ranges, as the CLI flags state them. M: graph neighbours per vector (FAISS needs >= 2);
# efConstruction / efSearch: candidate list sizes while building / searching; nlist: IVF lists; nprobe: lists
# scanned per query; pq_m: PQ sub-vectors (bytes per vector), which must divide the dimension.
RANGES = {
    "hnsw_m": (2, 256),
    "ef_construction": (8, 4096),
    "ef_search": (1, 4096),
    "nlist": (1, 65536),
    "nprobe": (1, 65536),
    "pq_m": (1, 1024),
}
FLAGS = {name: "--" + name.replace("_", "-") for name in RANGES}
SEARCH_TIME = {"nprobe": "nprobe", "ef_search": "efSearch"}  # setting -> FAISS search parameter
POINTS_PER_LIST = 39  # FAISS's k-means wants at least 39 training vectors per centroid
PQ_TRAINING = POINTS_PER_LIST * 256  # 8-bit PQ codebooks: 256 centroids per sub-vector


@dataclass(frozen=True)
class DenseIndexType:
    """A dense part's FAISS index: ``kind`` one of INDEX_TYPES; each kind uses only its SETTINGS.

    ``nlist`` None is "sized to the corpus" (``fitted``); every recorded IVF type has a number.
    """

    kind: str = "flat"
    hnsw_m: int = 32
    ef_construction: int = 128
    ef_search: int = 64
    nlist: int | None = None
    nprobe: int = 16
    pq_m: int = 64

    def __post_init__(self) -> None:
        if self.kind not in INDEX_TYPES:
            raise NeedleError(f"--index-type must be one of {', '.join(INDEX_TYPES)}, got {self.kind!r}")
        for name, (low, high) in RANGES.items():
            value = getattr(self, name)
            if name == "nlist" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise NeedleError(f"{FLAGS[name]} must be an integer in [{low}, {high}], got {value!r}")
        if self.nlist is not None and self.kind.startswith("ivf") and self.nprobe > self.nlist:
            raise NeedleError(f"--nprobe {self.nprobe} is more than the {self.nlist} lists of --nlist")

    @classmethod
    def from_flags(cls, kind: str, hnsw_m: int | None = None, ef_construction: int | None = None,
                   ef_search: int | None = None, **others: int | None) -> "DenseIndexType":  # fmt: skip
        """The choice the CLI flags make (``others``: nlist, nprobe, pq_m); a setting of another type is refused,
        naming the flags and the types they apply to."""
        given = {"hnsw_m": hnsw_m, "ef_construction": ef_construction, "ef_search": ef_search, **others}
        settings = {name: value for name, value in given.items() if value is not None}
        foreign = [name for name in settings if name not in SETTINGS.get(kind, ())]
        if foreign:
            owners = [k for k in INDEX_TYPES if foreign[0] in SETTINGS[k]]
            same = [name for name in foreign if [k for k in INDEX_TYPES if name in SETTINGS[k]] == owners]
            flags = ", ".join(FLAGS[name] for name in same)
            raise NeedleError(
                f"{flags} only apply to --index-type {' or '.join(owners)} (this build is --index-type {kind})"
            )
        if "nlist" in settings and "nprobe" not in settings:  # the default nprobe, within a small --nlist
            settings["nprobe"] = min(cls.nprobe, settings["nlist"])
        return cls(kind, **settings)

    def fitted(self, documents: int, training: int) -> "DenseIndexType":
        """This type sized to a corpus of DOCUMENTS whose index trains on its first TRAINING vectors (the build's
        chunk): ``nlist`` chosen when unset (sqrt(documents), at most training / 39), refused when the sample
        cannot train it; ivf-pq refused below 9,984 training vectors. Raises NeedleError naming the flag."""
        if not self.kind.startswith("ivf"):
            return self
        sample = min(documents, training)
        if self.kind == "ivf-pq" and sample < PQ_TRAINING:
            raise NeedleError(
                f"--index-type ivf-pq trains 256 codes per sub-vector on at least {PQ_TRAINING:,} vectors, and this "
                f"build trains on {sample:,} (the corpus or its first --chunk-size): use sq8 or ivf-flat"
            )
        most = sample // POINTS_PER_LIST
        if most < 1:
            raise NeedleError(f"--index-type {self.kind} needs at least {POINTS_PER_LIST} documents, got {sample}")
        if self.nlist is None:
            nlist = max(1, min(round(math.sqrt(documents)), most))
            return replace(self, nlist=nlist, nprobe=min(self.nprobe, nlist))
        if self.nlist > most:
            raise NeedleError(
                f"--nlist {self.nlist} needs {self.nlist * POINTS_PER_LIST:,} training vectors ({POINTS_PER_LIST} per "
                f"list); this build trains on {sample:,} (the corpus or its first --chunk-size): use --nlist <= {most}"
            )
        return self

    def check_dimension(self, dim: int) -> None:
        """Refuse a ``pq_m`` that does not divide the embedding dimension DIM, naming the ones that do."""
        if self.kind == "ivf-pq" and dim % self.pq_m:
            fits = [m for m in range(1, dim + 1) if dim % m == 0 and m <= RANGES["pq_m"][1]]
            raise NeedleError(
                f"--pq-m {self.pq_m} must divide the embedding dimension {dim}: one of {', '.join(map(str, fits))}"
            )

    def with_search(self, nprobe: int | None = None, ef_search: int | None = None) -> "DenseIndexType":
        """This index searched with other search-time settings (no rebuild); one its type lacks is refused."""
        given = {"nprobe": nprobe, "ef_search": ef_search}
        changes = {name: value for name, value in given.items() if value is not None}
        for name in changes:
            if name not in SETTINGS[self.kind]:
                owners = " or ".join(k for k in INDEX_TYPES if name in SETTINGS[k])
                raise NeedleError(f"{FLAGS[name]} applies to {owners} indexes; this index is {self.kind}")
        return replace(
            self, nprobe=changes.get("nprobe", self.nprobe), ef_search=changes.get("ef_search", self.ef_search)
        )

    def factory(self) -> str:
        """The FAISS factory string of FAISSDocumentStore's ``index_factory``."""
        if self.kind.startswith("ivf") and self.nlist is None:
            raise NeedleError(f"--index-type {self.kind}: nlist is not sized to the corpus yet (DenseIndexType.fitted)")
        return {
            "flat": "Flat",
            "hnsw": f"HNSW{self.hnsw_m}",
            "sq8": "SQ8",
            "hnsw-sq8": f"HNSW{self.hnsw_m},SQ8",
            "ivf-flat": f"IVF{self.nlist},Flat",
            "ivf-sq8": f"IVF{self.nlist},SQ8",
            "ivf-pq": f"IVF{self.nlist},PQ{self.pq_m}",
        }[self.kind]

    def search_params(self) -> dict[str, float] | None:
        """FAISSDocumentStore's ``search_params``: efConstruction applies to the build, efSearch and nprobe to
        searches (a loaded index takes them again, so a search-time override needs no rebuild)."""
        if self.kind in ("hnsw", "hnsw-sq8"):
            return {"efConstruction": self.ef_construction, "efSearch": self.ef_search}
        if self.kind.startswith("ivf"):
            return {"nprobe": self.nprobe}
        return None

    def recorded(self) -> dict[str, Any] | None:
        """What the manifest records: None for flat (manifests from before index types are flat), else the kind
        and its own settings."""
        if self.kind == "flat":
            return None
        return {"kind": self.kind, **{name: getattr(self, name) for name in SETTINGS[self.kind]}}

    @classmethod
    def from_recorded(cls, recorded: Any) -> "DenseIndexType":
        """Read ``recorded`` back; None (older manifests) is flat. Raises NeedleError naming a bad field."""
        if recorded is None:
            return FLAT
        kind = recorded.get("kind") if isinstance(recorded, dict) else None
        if kind not in INDEX_TYPES or kind == "flat" or set(recorded) != {"kind", *SETTINGS[kind]}:
            raise NeedleError(f"dense_index must name a kind ({', '.join(INDEX_TYPES[1:])}) and its settings; "
                              f"got {recorded!r}"[:300])  # fmt: skip
        if "nlist" in recorded and recorded["nlist"] is None:
            raise NeedleError(f"--nlist must be an integer in {list(RANGES['nlist'])}, got None")
        return cls(**recorded)


FLAT = DenseIndexType()  # the default: exact search


def check_index_type_options(choice: DenseIndexType, *, store: str, dense: bool, multimodal: bool) -> None:
    """Refuse an index type other than flat where no FAISS dense part is built, naming the flag that conflicts."""
    if choice.kind == "flat":
        return
    flag = f"--index-type {choice.kind}"
    if not dense:
        raise NeedleError(f"{flag} indexes the dense part; it cannot go with --no-dense")
    if store != "faiss":
        raise NeedleError(f"{flag} is for --store faiss (--store {store} chooses its own index)")
    if multimodal:
        raise NeedleError(f"{flag} is not available with --multimodal (image indexes are flat)")
