"""UltraRAG's `backend` and `backend_configs` (and the top-level keys its embedders take), checked into an
``EmbedderSpec`` (``needle_retrieval.ultrarag.embedder_spec``).

The chosen backend's block must hold the keys its embedders (or, for `bm25`, its tokenizer) take; the blocks of
the other backends, which UltraRAG never reads, are type-checked for the keys needle knows, and their unknown keys,
like blocks of backends needle does not know, are only named to the caller, which warns about them. A literal
`backend_configs.openai.api_key` is used through RETRIEVER_API_KEY (``needle_retrieval.ultrarag.keys``).
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from needle_retrieval.ultrarag.embedder_spec import ENCODE_OPTIONS, OPTIONS, EmbedderSpec, check_block, embedder_spec
from needle_retrieval.ultrarag.keys import take_literal
from needle_retrieval.ultrarag.options import OPTIONAL_STRING, OptionType, options_block
from needle_retrieval.ultrarag.values import gpu_list, int_value, string_value, unknown_keys

if TYPE_CHECKING:
    from haystack.utils import Secret

# Keys of a backend block read here, not by the factory, and their types.
BLOCK_EXTRA: dict[str, dict[str, OptionType]] = {
    "openai": {"api_key": OPTIONAL_STRING},
    "bm25": {"save_path": OPTIONAL_STRING},
}
KEY_VARIABLES = ["RETRIEVER_API_KEY", "OPENAI_API_KEY"]


def embedding_spec(data: dict[str, Any], backend: str, ignored: list[str]) -> EmbedderSpec:
    """The checked spec of BACKEND, the embedding backend of the parameters DATA (BM25's too: it holds the
    tokenizer settings); the names of the keys UltraRAG would not read are added to IGNORED.

    :raises ValueError: naming the key.
    """
    spec = embedder_spec(
        backend,
        string_value(data, "model_name_or_path", ""),
        _backend_block(data, backend, ignored),
        query_instruction=string_value(data, "query_instruction", ""),
        batch_size=int_value(data, "batch_size", 32),
        gpu_ids=gpu_list(data.get("gpu_ids"), backend),
        api_key=_api_key(data, backend),
    )
    if spec.dense and not string_value(data, "model_name_or_path", "") and backend != "openai":
        raise ValueError("model_name_or_path: the model is required for a dense backend")
    return spec


def _backend_block(data: dict[str, Any], backend: str, ignored: list[str]) -> dict[str, Any]:
    """Check `backend_configs`: in each block of a backend needle knows, the types of its keys; the chosen block
    holds known keys only, and the others' unknown keys and the blocks of unknown backends are added to IGNORED.
    Returns the chosen backend's block with the factory's keys only."""
    configs = options_block("backend_configs", data.get("backend_configs"))
    ignored += unknown_keys("backend_configs", configs, (*OPTIONS, backend))
    for name in [name for name in configs if name in OPTIONS]:
        configs[name] = options_block(f"backend_configs.{name}", configs[name])
        extra = BLOCK_EXTRA.get(name)
        block = configs[name] if name == backend else _known_only(name, configs[name], extra, ignored)
        check_block(name, block, extra)
    data["backend_configs"] = configs
    block = dict(configs.get(backend) or {})
    for key in BLOCK_EXTRA.get(backend, ()):
        block.pop(key, None)
    return block


def _known_only(
    name: str, block: dict[str, Any], extra: Mapping[str, OptionType] | None, ignored: list[str]
) -> dict[str, Any]:
    """BLOCK, of backend NAME not chosen, less the keys needle does not know (added to IGNORED), inside
    `sentence_transformers_encode` too."""
    where, allowed = f"backend_configs.{name}", (*OPTIONS[name], *(extra or {}))
    ignored += unknown_keys(where, block, allowed)
    known = {key: value for key, value in block.items() if key in allowed}
    encode = known.get("sentence_transformers_encode")
    if isinstance(encode, Mapping):
        ignored += unknown_keys(f"{where}.sentence_transformers_encode", encode, ENCODE_OPTIONS)
        known["sentence_transformers_encode"] = {key: value for key, value in encode.items() if key in ENCODE_OPTIONS}
    return known


def _api_key(data: dict[str, Any], backend: str) -> "Secret | None":
    """The openai key's Secret; a literal key in the file is moved into RETRIEVER_API_KEY with a warning."""
    from haystack.utils import Secret

    if backend != "openai":
        return None
    key = (data["backend_configs"].get("openai") or {}).get("api_key")
    if not take_literal("backend_configs.openai.api_key", key, "RETRIEVER_API_KEY"):
        return None
    return Secret.from_env_var(KEY_VARIABLES, strict=False)
