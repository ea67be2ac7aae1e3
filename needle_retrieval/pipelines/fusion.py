"""The fusion parameters a search of an index runs with, and ``DIR/fusion.json``, where `needle tune` puts them.

The file sits beside the generations (``FUSION_FILE``), so a rebuild keeps it: the
parameters weigh two score lists against each other and stay meaningful for a refreshed corpus; run
``needle tune`` again after changing the model or the corpus. Schema ``needle.fusion/1``::

    {"schema": "needle.fusion/1",
     "mix": {"baseline": 0.45, "amplitude": 0.05, "slope": 0.1, "midpoint": 50.0},
     "rrf": {"k": 20},
     "fitted_on": {"dataset": "scifact", "split": "train", "queries": 809,
                   "model": "sentence-transformers/all-MiniLM-L6-v2", "ndcg@10": {"mix": 0.73, "rrf": 0.72}}}

The file is data someone else wrote: it is parsed strictly (no NaN or Infinity, no unknown key, every number in
the range the ranker accepts; JSON nested too deeply, and an integer of more digits than Python reads, refused by
name) and any problem is one line naming the file and the field.

What one search runs with is a ``FusionSetting``, whose ``source`` every report names: ``default`` (the
rankers' own values: ``Mix()`` and RRF k = 61), ``tuned`` (the index's ``DIR/fusion.json``) or ``file`` (a
fusion file written by `needle tune --out FILE` and given as ``--fusion FILE``, for that run only). None where a
setting is asked for means the index's own: tuned when ``DIR/fusion.json`` exists, else the default.
``apply_fusion`` puts a setting's values into a search pipeline's init parameters: every component whose template
names the mix curve (``MixRetrieveRanker``, its batch twin, a batch mix joiner) takes ``mix``; an
``RRFBatchJoiner`` (what ``needle search`` and ``needle eval`` run for ``--mode rrf``) takes ``rrf.k``.
Haystack's ``DocumentJoiner`` in the single-query rrf_search.yaml fixes k = 61 and names none, and Milvus's own RRF
(``rrf_k``, on 1-based ranks) is not a fitted value: both are left as they are.
"""

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from haystack.document_stores.errors import DocumentStoreError

from components.atomic_files import atomic_write_text, fsync_directory
from components.checks import parse_decimal, shown
from components.joiners.rrf_batch_joiner import MAX_K, RRF_K
from components.stores.file_digests import read_regular
from needle_retrieval.errors import NeedleError

# `needle tune`'s fitted fusion parameters, beside the generations (needle_retrieval.index.generations): every rebuild
# keeps them.
FUSION_FILE = "fusion.json"
MAX_FUSION_BYTES = 1 << 20  # `needle tune` writes well under 4 KiB; anything near this is not its file
SCHEMA = "needle.fusion/1"
MIX_KEYS = ("baseline", "amplitude", "slope", "midpoint")
MAX_SLOPE = 1000.0  # the sigmoid is a step long before this; a larger value is a damaged file
MAX_MIDPOINT = 100000.0  # characters (a query holds at most this many: components.checks)


@dataclass(frozen=True)
class Mix:
    """The dense weight curve of the mix rankers: ``baseline + amplitude * sigmoid(slope * (len - midpoint))``."""

    baseline: float = 0.4
    amplitude: float = 0.3
    slope: float = 1.0
    midpoint: float = 6.0


@dataclass(frozen=True)
class Fusion:
    """What ``fusion.json`` holds: the mix curve, the RRF constant and what they were fitted on."""

    mix: Mix
    rrf_k: int
    fitted_on: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        """The file's content (schema ``needle.fusion/1``)."""
        return {"schema": SCHEMA, "mix": asdict(self.mix), "rrf": {"k": self.rrf_k}, "fitted_on": self.fitted_on}


Source = Literal["default", "tuned", "file"]


@dataclass(frozen=True)
class FusionSetting:
    """The fusion one search runs with and where it came from (see the module docstring for the sources)."""

    source: Source
    fusion: Fusion
    path: Path | None = None  # the fusion file read: DIR/fusion.json (tuned) or the --fusion FILE; None: default

    def record(self) -> dict[str, Any]:
        """What eval results record: ``{"source", "path", "mix": {...}, "rrf": {"k"}}``."""
        path = None if self.path is None else str(self.path)
        return {"source": self.source, "path": path, "mix": asdict(self.fusion.mix), "rrf": {"k": self.fusion.rrf_k}}

    def describe(self) -> str:
        """One line for people, e.g. ``tuned (ix/fusion.json): mix baseline 0.15, ..., rrf k 61``."""
        where = "" if self.path is None else f" ({self.path})"
        mix = ", ".join(f"{key} {value:g}" for key, value in asdict(self.fusion.mix).items())
        return f"{self.source}{where}: mix {mix}; rrf k {self.fusion.rrf_k}"


DEFAULT_FUSION = FusionSetting("default", Fusion(Mix(), RRF_K, {}))


def fusion_path(index_dir: Path) -> Path:
    """Where the fusion parameters of an index directory live."""
    return Path(index_dir) / FUSION_FILE


def read_fusion(index_dir: Path) -> Fusion | None:
    """The checked parameters of ``DIR/fusion.json``, or None when the index was never tuned.

    :raises NeedleError: one line naming the file and the field, for anything but a valid file.
    """
    path = fusion_path(index_dir)
    if not os.path.lexists(path):
        return None
    try:
        text = read_regular(path, MAX_FUSION_BYTES).decode("utf-8")
    except (DocumentStoreError, OSError, UnicodeDecodeError) as error:
        raise NeedleError(f"{path}: cannot be read ({error}); run `needle tune` again or delete it") from None
    return parse_fusion(text, path)


def parse_fusion(text: str, path: Path) -> Fusion:
    """Parse and check the text of a fusion file; errors name PATH and the field."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_int=parse_decimal)
    except ValueError as error:
        raise NeedleError(f"{path}: not valid JSON ({error}); run `needle tune` again or delete it") from None
    except RecursionError:  # `needle tune` writes three levels; thousands of [ are someone else's file
        raise NeedleError(f"{path}: not valid JSON (nested too deeply); run `needle tune` again or delete it") from None
    top = _object(data, path, "the file", {"schema", "mix", "rrf", "fitted_on"})
    if top["schema"] != SCHEMA:
        raise NeedleError(f"{path}: field schema must be {SCHEMA!r}, got {top['schema']!r}")
    mix_data = _object(top["mix"], path, "mix", set(MIX_KEYS))
    mix = Mix(**{key: _number(mix_data[key], path, f"mix.{key}") for key in MIX_KEYS})
    _check_mix(mix, path)
    rrf = _object(top["rrf"], path, "rrf", {"k"})
    k = rrf["k"]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise NeedleError(f"{path}: field rrf.k must be an integer in [1, {MAX_K}], got {shown(k)}")
    fitted = top["fitted_on"]
    if not isinstance(fitted, dict):
        raise NeedleError(f"{path}: field fitted_on must be an object, got {type(fitted).__name__}")
    return Fusion(mix, k, fitted)


def _refuse_constant(name: str) -> float:
    """json's hook for NaN and Infinity, which a fusion file never holds."""
    raise ValueError(f"{name} is not a number JSON allows")


def _object(value: Any, path: Path, field: str, keys: set[str]) -> dict[str, Any]:
    """VALUE as an object holding exactly KEYS (an unknown or a missing key is an error naming it)."""
    if not isinstance(value, dict):
        raise NeedleError(f"{path}: {field} must be a JSON object, got {type(value).__name__}")
    prefix = "" if field == "the file" else f"{field}."
    unknown = sorted(set(value) - keys)
    if unknown:
        raise NeedleError(f"{path}: unknown field {prefix}{unknown[0]} (allowed: {', '.join(sorted(keys))})")
    missing = sorted(keys - set(value))
    if missing:
        raise NeedleError(f"{path}: field {prefix}{missing[0]} is missing")
    return value


def _number(value: Any, path: Path, field: str) -> float:
    """A finite JSON number (not a boolean) as a float."""
    # NaN and the infinities fail the bound; an int compares with it exactly (float() of a larger one would raise)
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= sys.float_info.max
    if not numeric:
        raise NeedleError(f"{path}: field {field} must be a number, got {shown(value)}")
    return float(value)


def _check_mix(mix: Mix, path: Path) -> None:
    """The ranges ``MixRetrieveRanker`` accepts, with finite upper bounds for slope and midpoint."""
    ranges = {
        "baseline": (0.0, 1.0),
        "amplitude": (0.0, 1.0),
        "slope": (0.0, MAX_SLOPE),
        "midpoint": (0.0, MAX_MIDPOINT),
    }
    for key, (low, high) in ranges.items():
        value = getattr(mix, key)
        open_low = key in ("slope", "midpoint")
        if value > high or value < low or (open_low and value == low):
            bracket = "(" if open_low else "["
            raise NeedleError(f"{path}: field mix.{key} must be in {bracket}{low}, {high}], got {value!r}")
    if mix.baseline + mix.amplitude > 1.0:
        raise NeedleError(
            f"{path}: fields mix.baseline + mix.amplitude must be <= 1, got {mix.baseline + mix.amplitude!r}"
        )


def write_fusion(index_dir: Path, fusion: Fusion) -> Path:
    """Write ``DIR/fusion.json`` (``write_fusion_file``); the caller holds DIR's writer lock."""
    return write_fusion_file(fusion_path(index_dir), fusion)


def write_fusion_file(path: Path, fusion: Fusion) -> Path:
    """Write a fusion file atomically (``components.atomic_files``): DIR/fusion.json, or the FILE of
    `needle tune --out FILE`."""
    text = json.dumps(fusion.as_json(), indent=1, allow_nan=False) + "\n"
    parse_fusion(text, path)  # never write what a reader would refuse
    atomic_write_text(path, text)
    return path


def remove_fusion(index_dir: Path) -> bool:
    """Remove ``DIR/fusion.json`` (`needle tune --reset`); returns whether there was one. The caller holds DIR's
    writer lock."""
    try:
        fusion_path(index_dir).unlink()
    except FileNotFoundError:
        return False
    fsync_directory(Path(index_dir))
    return True


def index_fusion(index_dir: Path) -> FusionSetting:
    """The index's own setting: DIR/fusion.json (checked) when `needle tune` wrote one, else the defaults."""
    fusion = read_fusion(index_dir)
    return DEFAULT_FUSION if fusion is None else FusionSetting("tuned", fusion, fusion_path(index_dir))


def file_fusion(path: Path) -> FusionSetting:
    """A fusion file given by hand (``--fusion FILE``), parsed as strictly as DIR/fusion.json."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise NeedleError(f"--fusion {path}: cannot be read ({reason}); give one `needle tune --out` wrote") from None
    return FusionSetting("file", parse_fusion(text, Path(path)), Path(path))


def fusion_option(value: str) -> FusionSetting:
    """The ``--fusion FILE|default`` option of search, eval and serve, as an argparse ``type``: ``default`` searches
    with the defaults whatever DIR/fusion.json says, a path with that fusion file; either for this run only."""
    if value == "default":
        return DEFAULT_FUSION
    try:
        return file_fusion(Path(value))
    except NeedleError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def apply_fusion(data: dict[str, Any], setting: FusionSetting) -> dict[str, Any]:
    """Set a search pipeline dict's fusion parameters to SETTING's values (the defaults too, written out)."""
    fusion = setting.fusion
    for spec in data["components"].values():
        params = spec.setdefault("init_parameters", {})
        if set(MIX_KEYS) <= set(params):
            params.update(asdict(fusion.mix))
        elif str(spec.get("type", "")).endswith(".RRFBatchJoiner"):
            params["k"] = fusion.rrf_k
    return data
