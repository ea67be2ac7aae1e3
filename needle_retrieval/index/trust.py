"""What an index may make a search do on this machine: only what the user named, never what the index says.

An index directory is data someone else may have written (a shared drive, a downloaded archive), and its manifest
records how it was built: the model, the embedding backend, its server, the environment variables holding the key.
Obeyed blindly, that record would let whoever wrote the index choose code to run (``trust_remote_code``: a model's
own Python files), a server to send the queries to (``base_url``, an Infinity ``url``, a Milvus server ``uri``) and
a secret to send along (``api_key`` naming any environment variable). So a search pipeline built from an index is
checked against a :class:`Trust`: the models whose code the user allows, the servers they allow, the key variables
they allow, given by the user's invocation (``--trust-remote-code MODEL``, ``--allow-server URL``,
``--allow-key-env VAR``, the ``NEEDLE_*`` variables below, a parameter.yaml, or code), and anything else is refused
in one line that says what to pass. The index's record only has to match.

What needs no permission: a model by name or directory without ``trust_remote_code`` (sentence-transformers 6 and
transformers load no code from a model unless told to: its files are weights and settings), a Milvus Lite file inside
the generation, a managed Infinity server (run from the user's own venv), and the variables our components read by
default (``DEFAULT_KEY_VARIABLES``: each goes only to a server the user allowed, or to its own service).
"""

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from needle_retrieval.errors import NeedleError

if TYPE_CHECKING:
    from needle_retrieval.ultrarag.embedder_spec import EmbedderSpec

# The environment's equivalents of the flags (comma-separated lists), for entry points without flags: `hayhooks run`
# over a generation, a Python program using Searcher without a trust= argument.
MODELS_VARIABLE = "NEEDLE_TRUST_REMOTE_CODE"
SERVERS_VARIABLE = "NEEDLE_ALLOW_SERVERS"
KEYS_VARIABLE = "NEEDLE_ALLOW_KEY_ENV"
# The variables our components read a key or token from when none is named (components/*: `Secret.from_env_var`
# defaults); an index naming only these chooses no secret.
DEFAULT_KEY_VARIABLES = frozenset(
    {"OPENAI_API_KEY", "RETRIEVER_API_KEY", "INFINITY_API_KEY", "MILVUS_TOKEN", "HF_API_TOKEN", "HF_TOKEN"}
)
# Where an OpenAI-compatible embedder with no base_url sends its requests.
OPENAI_SERVER = "https://api.openai.com/v1"
MODEL_KEYS = ("model", "model_name_or_path")
SERVER_KEYS = ("base_url", "url", "uri", "api_base_url")


def _server(url: str) -> str:
    """URL as compared: without trailing slashes (``http://host/v1/`` is ``http://host/v1``)."""
    return url.rstrip("/")


def _listed(variable: str) -> tuple[str, ...]:
    """The comma-separated, non-empty items of environment VARIABLE."""
    return tuple(item.strip() for item in os.environ.get(variable, "").split(",") if item.strip())


@dataclass(frozen=True)
class Trust:
    """What the user allows an index's pipelines to use: nothing by default.

    :param remote_code_models: models (as the index names them) whose own Python code may run
        (``trust_remote_code``).
    :param servers: servers the queries may be sent to (an OpenAI-compatible ``base_url``, an Infinity ``url``, a
        Milvus server ``uri``); ``https://api.openai.com/v1`` for the OpenAI backend without a base_url.
    :param key_variables: environment variables, beyond ``DEFAULT_KEY_VARIABLES``, a key may be read from.
    """

    remote_code_models: tuple[str, ...] = ()
    servers: tuple[str, ...] = ()
    key_variables: tuple[str, ...] = ()

    @classmethod
    def from_environment(cls) -> "Trust":
        """The permissions the ``NEEDLE_TRUST_REMOTE_CODE``, ``NEEDLE_ALLOW_SERVERS`` and ``NEEDLE_ALLOW_KEY_ENV``
        variables give (comma-separated lists; unset: none)."""
        return cls(_listed(MODELS_VARIABLE), _listed(SERVERS_VARIABLE), _listed(KEYS_VARIABLE))

    def merged(self, other: "Trust") -> "Trust":
        """Everything this and OTHER allow."""
        return Trust(
            self.remote_code_models + other.remote_code_models,
            self.servers + other.servers,
            self.key_variables + other.key_variables,
        )

    def allows_server(self, url: str) -> bool:
        return _server(url) in {_server(s) for s in self.servers}

    def allows_key(self, variable: str) -> bool:
        return variable in DEFAULT_KEY_VARIABLES or variable in self.key_variables


def config_trust(spec: "EmbedderSpec", milvus_uri: str | None = None) -> Trust:
    """What the user's own config (an UltraRAG parameter.yaml: SPEC, its backend, and its Milvus MILVUS_URI) allows:
    exactly what its own query embedder would use (the code of its model where trust_remote_code is on, Infinity's
    default included; its embedding server; its key variables), and its Milvus server."""
    servers = [milvus_uri] if isinstance(milvus_uri, str) and "://" in milvus_uri else []
    if not spec.dense:
        return Trust(servers=tuple(servers))
    embedder = spec.query_embedder()
    params = dict(embedder["init_parameters"])
    model = next((params[k] for k in MODEL_KEYS if isinstance(params.get(k), str)), None)
    models = (model,) if model is not None and _trusts_remote_code(params) else ()
    servers += _servers(str(embedder["type"]), params)
    return Trust(models, tuple(servers), tuple(_key_variables(params.values())))


def check_pipeline(data: Mapping[str, Any], trust: Trust, source: str) -> None:
    """Refuse a pipeline (as built from the index at SOURCE) that would run model code, contact a server or read a
    key variable TRUST does not allow, naming the component, the value and what to pass.

    :raises NeedleError: one line for the first thing not allowed.
    """
    for name, spec in (data.get("components") or {}).items():
        for type_name, params in _objects(spec):
            problem = _problem(type_name, params, trust)
            if problem is not None:
                raise NeedleError(
                    f"{source}: its component `{name}` {problem}; an index chooses no code, server or key, so this "
                    "one is refused"
                )


def _objects(spec: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(type, init parameters) of a serialized object and of every serialized object inside it (a document store in
    a retriever)."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("init_parameters"), Mapping):
        return
    params = dict(spec["init_parameters"])
    yield str(spec.get("type", "")), params
    for value in params.values():
        yield from _objects(value)


def _problem(type_name: str, params: dict[str, Any], trust: Trust) -> str | None:
    """What in one object's PARAMS TRUST does not allow (phrased to follow "its component `x`"), or None."""
    model = next((params[k] for k in MODEL_KEYS if isinstance(params.get(k), str)), None)
    if _trusts_remote_code(params) and model not in trust.remote_code_models:
        return (
            f"would run the Python code of model {model!r} (trust_remote_code): pass --trust-remote-code {model} "
            f"(or set {MODELS_VARIABLE}) only if you trust that model"
        )
    for server in _servers(type_name, params):
        if not trust.allows_server(server):
            return (
                f"would send the queries to {server}: pass --allow-server {server} (or set {SERVERS_VARIABLE}) if you "
                "mean to use that server"
            )
    for variable in _key_variables(params.values()):
        if not trust.allows_key(variable):
            return (
                f"would send the value of the environment variable {variable} as a key: pass --allow-key-env "
                f"{variable} (or set {KEYS_VARIABLE}) if that variable holds the key for this index's server"
            )
    return None


def _trusts_remote_code(value: Any) -> bool:
    """Whether a ``trust_remote_code`` that is not false appears anywhere in VALUE (model_kwargs included)."""
    if isinstance(value, Mapping):
        return any((k == "trust_remote_code" and v is not False) or _trusts_remote_code(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_trusts_remote_code(item) for item in value)
    return False


def _servers(type_name: str, params: Mapping[str, Any]) -> list[str]:
    """The servers an object's PARAMS name (a Milvus Lite path or a managed Infinity server is none)."""
    named = [params[k] for k in SERVER_KEYS if isinstance(params.get(k), str) and "://" in params[k]]
    if "openai" in type_name.lower() and "base_url" in params and params["base_url"] is None:
        named.append(OPENAI_SERVER)
    return named


def _key_variables(values: Iterable[Any]) -> Iterator[str]:
    """The environment variables named by the serialized secrets (``{"type": "env_var", ...}``) among VALUES."""
    for value in values:
        if isinstance(value, Mapping) and value.get("type") == "env_var":
            env_vars = value.get("env_vars")
            yield from (str(v) for v in (env_vars if isinstance(env_vars, list) else [env_vars]))
        elif isinstance(value, Mapping) and "init_parameters" not in value:
            yield from _key_variables(value.values())
