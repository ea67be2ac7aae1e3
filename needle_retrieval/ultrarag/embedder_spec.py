"""The embedding backend chosen by name, as UltraRAG's `backend:` setting chooses it: UltraRAG's `backend_configs`
schema, which is this application's configuration; the component library keeps only the registry of embedder
classes (``components.embedders.embedder_roles``).

`embedder_spec(backend, model_name_or_path, backend_configs)` takes one of `sentence_transformers`, `infinity`,
`openai` or `bm25` and that backend's block of UltraRAG's `backend_configs`, checks every option, and returns an
:class:`EmbedderSpec`: the document embedder and the query embedders (single and batch) as serialized components
(what a pipeline template's `embedder` entry holds) or as instances (`create_embedders`). `bm25` has no
embedders; its spec gives the BM25 store settings instead: UltraRAG's `lang` and `tokenizer` mapped onto the
BM25 store's tokenizer that cuts the same terms (`bm25_tokenizer`).

Importing this module imports no Haystack (which imports torch): the option checks are plain Python, so a
parameter file's keys can be checked before the model libraries load; `Secret` is imported where it is used.

Its table (``components.embedders.embedder_roles``) is the only way from a name to a class: a name from a file
never imports anything. An unknown backend or option is an error naming it and listing what is allowed.
`settings` (what an index manifest records) holds no secret: an API key is always a `Secret` read from the
environment (by default `OPENAI_API_KEY`, then `RETRIEVER_API_KEY`), and a serialized embedder names the
variables, never the key.

Nor does it name a program: `infinity_venv` (the environment whose `bin/infinity_emb` a managed Infinity server
runs) is the user's, from their own config when an index is built (`recorded` passes it on to the build's document
embedder), and never written into an index: `manifest_record` drops it from what a manifest keeps, the query
embedders serialized into an index's search pipelines leave it out, and a manifest that holds one is refused
(`from_recorded`, `MACHINE_OPTIONS`). A search runs the server of `$NEEDLE_INFINITY_VENV` or `.venv-infinity`
(`components.embedders.infinity_server.default_venv`).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from components.embedders.embedder_roles import EmbedderRole, embedder_class
from needle_retrieval.ultrarag.bm25_terms import bm25_lang, bm25_tokenizer
from needle_retrieval.ultrarag.options import (
    BOOL,
    INT,
    OPTIONAL_MAPPING,
    OPTIONAL_NAME,
    OPTIONAL_STRING,
    STRING,
    OptionType,
    check_options,
    check_types,
    options_block,
)

if TYPE_CHECKING:
    from haystack.utils import Secret

BACKENDS = ("sentence_transformers", "infinity", "openai", "bm25")
ENCODE_OPTIONS = ("normalize_embeddings", "encode_chunk_size", "q_prompt_name", "psg_prompt_name", "q_task", "psg_task")
OPTIONS: dict[str, tuple[str, ...]] = {
    "sentence_transformers": ("trust_remote_code", "sentence_transformers_encode"),
    "infinity": (
        "bettertransformer",
        "pooling_method",
        "model_warmup",
        "trust_remote_code",
        "device",
        "url",
        "infinity_venv",
    ),
    "openai": ("model_name", "base_url", "concurrency"),
    "bm25": ("lang", "tokenizer"),
}


# The type of every option of every backend block (ENCODE: of sentence_transformers_encode).
TYPES: dict[str, dict[str, OptionType]] = {
    "sentence_transformers": {"trust_remote_code": BOOL, "sentence_transformers_encode": OPTIONAL_MAPPING},
    "infinity": {
        "bettertransformer": BOOL,
        "pooling_method": STRING,
        "model_warmup": BOOL,
        "trust_remote_code": BOOL,
        "device": STRING,
        "url": OPTIONAL_STRING,
        "infinity_venv": OPTIONAL_STRING,
    },
    "openai": {"model_name": OPTIONAL_STRING, "base_url": OPTIONAL_STRING, "concurrency": INT},
    "bm25": {"lang": STRING, "tokenizer": STRING},
}
ENCODE_TYPES = {
    "normalize_embeddings": BOOL,
    "encode_chunk_size": INT,
    "q_prompt_name": OPTIONAL_NAME,
    "psg_prompt_name": OPTIONAL_NAME,
    "q_task": OPTIONAL_NAME,
    "psg_task": OPTIONAL_NAME,
}
# Options that name something to run on this machine: honoured from the user's config at build time, never
# recorded in an index (EmbedderSpec.recorded) nor accepted from one (EmbedderSpec.from_recorded).
MACHINE_OPTIONS: dict[str, tuple[str, ...]] = {"infinity": ("infinity_venv",)}


def check_block(backend: str, block: Mapping[str, Any], extra: Mapping[str, OptionType] | None = None) -> None:
    """Check BACKEND's block of `backend_configs`: known keys (and EXTRA's, read by the caller) of their types.

    :raises ValueError: An unknown key (all of them named), or a value of the wrong type (naming its key path).
    """
    where = f"backend_configs.{backend}"
    extra = extra or {}
    check_options(where, block, OPTIONS[backend] + tuple(extra))
    check_types(where, block, TYPES[backend] | dict(extra))
    if backend == "sentence_transformers":
        encode = options_block(f"{where}.sentence_transformers_encode", block.get("sentence_transformers_encode"))
        check_options(f"{where}.sentence_transformers_encode", encode, ENCODE_OPTIONS)
        check_types(f"{where}.sentence_transformers_encode", encode, ENCODE_TYPES)


@dataclass(frozen=True)
class EmbedderSpec:
    """One checked backend choice: `embedder_spec`'s arguments, and the Secret holding the API key (if given)."""

    backend: str
    settings: dict[str, Any]  # model_name_or_path, backend_configs (this backend's block), query_instruction, ...
    api_key: "Secret | None" = field(default=None, compare=False)

    def recorded(self) -> dict[str, Any]:
        """`{"backend", "settings"}`, with the key's environment variables only: what a build passes on to its
        embedders (`from_recorded(..., local=True)`) and, less `MACHINE_OPTIONS` (`manifest_record`), what an
        index manifest keeps.

        :raises ValueError: The key is a token (a literal key), which must never be written into a file.
        """
        from haystack.utils.auth import SecretType

        key = self.api_key
        if key is not None and key.type != SecretType.ENV_VAR:
            raise ValueError("api_key: a literal key cannot be recorded in an index; use Secret.from_env_var(...)")
        recorded_key = None if key is None else key.to_dict()
        return {"backend": self.backend, "settings": {**self.settings, "api_key": recorded_key}}

    @classmethod
    def from_recorded(cls, recorded: Any, local: bool = False) -> "EmbedderSpec":
        """The spec a manifest recorded; anything else is a ValueError naming the problem.

        :param local: RECORDED comes from this process (a build's own `recorded()`, from the user's config), so it
            may name a program of this machine (`MACHINE_OPTIONS`); read from an index, it may not.
        """
        from haystack.utils import Secret
        from haystack.utils.auth import SecretType

        if not isinstance(recorded, Mapping) or set(recorded) != {"backend", "settings"}:
            raise ValueError(f"embedder must be {{'backend': ..., 'settings': {{...}}}}, got {recorded!r}")
        settings = recorded["settings"]
        if not isinstance(settings, Mapping):
            raise ValueError(f"embedder settings must be a mapping, got {settings!r}")
        settings = dict(settings)
        key = settings.pop("api_key", None)
        if key is not None and (not isinstance(key, dict) or key.get("type") != SecretType.ENV_VAR.value):
            raise ValueError(f"embedder api_key must name environment variables, got {key!r}")
        check_options("embedder settings", settings, SETTINGS)
        if not local:
            refuse_machine_options(recorded["backend"], settings.get("backend_configs"))
        return embedder_spec(recorded["backend"], **settings, api_key=None if key is None else Secret.from_dict(key))

    @property
    def dense(self) -> bool:
        """Whether this backend embeds (every backend but bm25)."""
        return self.backend != "bm25"

    @property
    def model(self) -> str:
        """The model the embedders use (openai: the block's `model_name`, else `model_name_or_path`)."""
        return str(self.block.get("model_name") or self.settings["model_name_or_path"])

    @property
    def block(self) -> dict[str, Any]:
        """This backend's block of `backend_configs`."""
        block: dict[str, Any] = self.settings["backend_configs"]
        return block

    def bm25_lang(self) -> str:
        """The BM25 store's `lang` from the bm25 block's `lang`: zh for Chinese, else en (the terms are the
        tokenizer's, `bm25_tokenizer`)."""
        return bm25_lang(self.block)

    def bm25_tokenizer(self) -> str:
        """The BM25 store's tokenizer that cuts the terms UltraRAG's BM25 backend cuts for the bm25 block's
        `tokenizer` and `lang` (`bm25_tokenizer`)."""
        return bm25_tokenizer(self.block)

    def document_embedder(self, embedding_path: str | None = None, overwrite: bool = False) -> dict[str, Any]:
        """The serialized document embedder, keeping its vectors in EMBEDDING_PATH (`.npy`) unless None."""
        extra = {"embedding_path": embedding_path, "overwrite": overwrite}
        return self._serialize(self.instance(EmbedderRole.DOCUMENT, extra))

    def query_embedder(self, batch: bool = False) -> dict[str, Any]:
        """The serialized query embedder: one query (`text` in), or a batch (`texts` in) with ``batch``; without
        the options that name a program (`MACHINE_OPTIONS`): a search pipeline, which an index keeps, names none."""
        data = self._serialize(self.instance(EmbedderRole.for_queries(batch)))
        for name in MACHINE_OPTIONS.get(self.backend, ()):
            data["init_parameters"].pop(name, None)
        return data

    def _serialize(self, embedder: Any) -> dict[str, Any]:
        """EMBEDDER's `to_dict`, without the device it resolved on this machine unless `gpu_ids` chose one
        (a file written here must still pick the best device where it is loaded)."""
        data: dict[str, Any] = embedder.to_dict()
        if self.backend == "sentence_transformers" and self.settings["gpu_ids"] is None:
            data["init_parameters"].pop("device", None)
        return data

    def create(
        self, embedding_path: str | None = None, overwrite: bool = False, batch: bool = False
    ) -> tuple[Any, Any]:
        """(document embedder, query embedder) instances; the batch query embedder with ``batch``."""
        document = self.instance(EmbedderRole.DOCUMENT, {"embedding_path": embedding_path, "overwrite": overwrite})
        return document, self.instance(EmbedderRole.for_queries(batch))

    def instance(self, role: EmbedderRole, extra: dict[str, Any] | None = None) -> Any:
        """The embedder of ROLE with EXTRA init parameters; not warmed up."""
        if not self.dense:
            raise ValueError("backend bm25 has no embedders: it indexes words, not vectors")
        cls = embedder_class(self.backend, role)
        params = {**self._params(role), **(extra or {})}
        if self.backend != "sentence_transformers" and self.api_key is not None:
            params["api_key"] = self.api_key
        return cls(**params)

    def _params(self, role: EmbedderRole) -> dict[str, Any]:
        """Init parameters of the backend's embedder of ROLE, from the checked settings."""
        s, block = self.settings, self.block
        queries = role.embeds_queries
        query = {"query_instruction": s["query_instruction"]} if queries else {}
        if self.backend == "openai":
            return query | {
                "model_name": self.model,
                "base_url": block.get("base_url"),
                "batch_size": s["batch_size"],
                "concurrency": block.get("concurrency", 4),
            }
        if self.backend == "infinity":
            return query | {"model_name_or_path": s["model_name_or_path"], "batch_size": s["batch_size"], **block}
        encode = block.get("sentence_transformers_encode") or {}
        params = query | {
            "model": s["model_name_or_path"],
            "trust_remote_code": block.get("trust_remote_code", False),
            "batch_size": s["batch_size"],
            "gpu_ids": s["gpu_ids"],
            "normalize_embeddings": encode.get("normalize_embeddings", True),
            "prompt_name": encode.get("q_prompt_name" if queries else "psg_prompt_name"),
            "task": encode.get("q_task" if queries else "psg_task"),
        }
        if queries:
            params["progress_bar"] = False
        elif "encode_chunk_size" in encode:
            params["encode_chunk_size"] = encode["encode_chunk_size"]
        return params


SETTINGS = ("model_name_or_path", "backend_configs", "query_instruction", "batch_size", "gpu_ids")


def embedder_spec(
    backend: str,
    model_name_or_path: str,
    backend_configs: Mapping[str, Any] | None = None,
    *,
    query_instruction: str = "",
    batch_size: int = 32,
    gpu_ids: list[int] | None = None,
    api_key: "Secret | None" = None,
) -> EmbedderSpec:
    """Check BACKEND and its `backend_configs` block; the spec of its embedders (or of its BM25 settings).

    :param backend: `sentence_transformers`, `infinity`, `openai` or `bm25`.
    :param model_name_or_path: The model (openai: used when the block has no `model_name`).
    :param backend_configs: This backend's block of UltraRAG's `backend_configs` (not the whole mapping).
    :param query_instruction: Text put before every query (the seed's `query_instruction`).
    :param batch_size: Texts per forward pass or request (the seed's `batch_size`).
    :param gpu_ids: sentence_transformers: the GPUs to use (the seed's `gpu_ids`); None: the best device.
    :param api_key: openai/infinity: the key as a Secret; None: the embedders' default environment variables.
    :raises ValueError: An unknown backend, an option the backend does not take, a value of the wrong type (a
        string "false" for a boolean: naming its key path, ``check_block``), or a value out of range (the
        embedder's own check, naming the parameter).
    """
    from haystack.utils import Secret

    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r} is not supported; choose one of {', '.join(BACKENDS)}")
    block = options_block(f"backend_configs.{backend}", backend_configs)
    check_block(backend, block)
    if api_key is not None and not isinstance(api_key, Secret):
        raise ValueError("api_key must be a haystack.utils.Secret (e.g. Secret.from_env_var('RETRIEVER_API_KEY'))")
    if gpu_ids is not None and backend != "sentence_transformers":
        raise ValueError(f"gpu_ids is not supported with backend {backend} (infinity: backend_configs.infinity.device)")
    settings: dict[str, Any] = {"model_name_or_path": model_name_or_path, "backend_configs": block}
    settings |= {"query_instruction": query_instruction, "batch_size": batch_size, "gpu_ids": gpu_ids}
    spec = EmbedderSpec(backend, settings, api_key)
    if spec.dense:
        for role in EmbedderRole:  # builds (never warms up) each embedder, so a bad value fails now, naming it
            spec.instance(role)
    else:
        spec.bm25_tokenizer()
    return spec


def manifest_record(recorded: Mapping[str, Any]) -> dict[str, Any]:
    """What an index manifest keeps of a build's `EmbedderSpec.recorded()`: all but `MACHINE_OPTIONS`, which name
    programs of the building machine (the user's, never the index's)."""
    local = MACHINE_OPTIONS.get(str(recorded.get("backend")), ())
    settings = dict(recorded.get("settings") or {})
    block = settings.get("backend_configs")
    if local and isinstance(block, Mapping):
        settings["backend_configs"] = {k: v for k, v in block.items() if k not in local}
    return {**recorded, "settings": settings}


def refuse_machine_options(backend: Any, block: Any) -> None:
    """Refuse a recorded backend block that names a program to run (`MACHINE_OPTIONS`), naming the option."""
    names = [n for n in MACHINE_OPTIONS.get(str(backend), ()) if isinstance(block, Mapping) and n in block]
    if names:
        from components.embedders.infinity_server import DEFAULT_VENV, VENV_VARIABLE

        raise ValueError(
            f"backend_configs.{names[0]} {str(block[names[0]])[:80]!r} names a program to run, which an index never "
            f"does: the Infinity server runs from ${VENV_VARIABLE} (default {DEFAULT_VENV}); rebuild the index"
        )


def create_embedders(
    backend: str,
    model_name_or_path: str,
    backend_configs: Mapping[str, Any] | None = None,
    *,
    embedding_path: str | None = None,
    overwrite: bool = False,
    batch: bool = False,
    **options: Any,
) -> tuple[Any, Any]:
    """(document embedder, query embedder) instances of BACKEND, not warmed up; OPTIONS as for `embedder_spec`."""
    return embedder_spec(backend, model_name_or_path, backend_configs, **options).create(
        embedding_path, overwrite, batch
    )
