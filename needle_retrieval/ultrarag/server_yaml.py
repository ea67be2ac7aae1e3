"""The server.yaml UltraRAG's `build` tool writes beside a server's parameter.yaml, for needle's retriever tools.

`ultrarag build pipeline.yaml` launches each server, calls its ``build(parameter_file)`` tool, then reads
``server.yaml`` from the parameter file's directory: which command runs the server (``path``), and for each tool
where its arguments come from (``input``) and where its answer goes (``output``). `ultrarag run` then calls the
tools with those values. Every UltraRAG server writes it the same way (``UltraRAG_MCP_Server.build`` at HEAD
015e838), and so does this module, for the tools needle lists:

* ``path``: the file's own ``path:`` key, else ``<the file's directory>/src/<its name>.py``; it must exist, as
  UltraRAG requires (`ultrarag run` launches ``python <path>``: needle's drop-in goes there,
  ``needle_retrieval.ultrarag.dropin``). ``parameter``: the ``parameter_file`` argument as given.
* ``tools``: per tool, ``input`` maps each parameter, in signature order, to the name its output spec gives at
  that position (one past the spec's names is left out, as UltraRAG's build leaves it); a name the parameter file
  holds gets ``$`` (the client then takes the file's value). ``output``: the spec's right-hand names, ``$``-prefixed
  alike; a spec ending in ``None`` has none. The specs are UltraRAG's retriever's (``RETRIEVER_OUTPUTS``) and
  needle's own for its per-provider web tools (``NEEDLE_OUTPUTS``); a tool with no spec maps every parameter to
  itself.
* ``prompts``: ``{}`` (a retriever has none).

The file is replaced crash-safely (``components.atomic_files``), so `ultrarag build` never reads half of one.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from components.atomic_files import atomic_write_text
from needle_retrieval.errors import NeedleError
from needle_retrieval.yaml_data import load_yaml

__all__ = ["NEEDLE_OUTPUTS", "RETRIEVER_OUTPUTS", "server_config", "write_server_yaml"]

# UltraRAG HEAD's retriever tools in its registration order: "inputs->outputs" (servers/retriever/src/retriever.py).
RETRIEVER_OUTPUTS = {
    "retriever_init": "model_name_or_path,backend_configs,batch_size,corpus_path,gpu_ids,is_multimodal,backend,"
    "index_backend,index_backend_configs,is_demo,collection_name->None",
    "retriever_embed": "embedding_path,overwrite,is_multimodal->None",
    "retriever_index": "embedding_path,overwrite,collection_name,corpus_path->None",
    "retriever_search": "q_ls,top_k,query_instruction,collection_name->ret_psg",
    "retriever_batch_search": "batch_query_list,top_k,query_instruction,collection_name->ret_psg_ls",
    "retriever_project_memory_search": "q_ls,top_k,query_instruction,current_user_id->project_memory_content",
    "bm25_index": "overwrite->None",
    "bm25_search": "q_ls,top_k->ret_psg",
    "retriever_deploy_search": "retriever_url,q_ls,top_k,query_instruction->ret_psg",
    "retriever_websearch": "q_ls,top_k,retrieve_thread_num,websearch_backend,websearch_backend_configs->ret_psg",
    "retriever_batch_websearch": "batch_query_list,top_k,retrieve_thread_num,websearch_backend,"
    "websearch_backend_configs->ret_psg_ls",
}
# needle's per-provider web tools, shaped as retriever_websearch so a pipeline can name them the same way.
NEEDLE_OUTPUTS = {
    f"retriever_{provider}_search": "q_ls,top_k,retrieve_thread_num->ret_psg"
    for provider in ("exa", "tavily", "zhipuai")
}


def read_parameters(parameter_file: Path) -> dict[str, Any]:
    """The parameter file's values as UltraRAG's build reads them: ``{}`` when there is no file or it is empty."""
    if not parameter_file.exists():
        return {}
    try:
        data = load_yaml(parameter_file.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise NeedleError(f"cannot read the parameter file {parameter_file}: {' '.join(str(error).split())}") from None
    if not isinstance(data, dict):
        raise NeedleError(f"{parameter_file}: a parameter file holds a mapping of keys, got {type(data).__name__}")
    return data


def _named(name: str, parameters: Mapping[str, Any]) -> str:
    """NAME, ``$``-prefixed when the parameter file holds it (the client then passes the file's value)."""
    return "$" + name if name in parameters and not name.startswith("$") else name


def io_mapping(params: Sequence[str], inputs: str | None, parameters: Mapping[str, Any]) -> dict[str, str]:
    """Each parameter to the name INPUTS gives at its position (no INPUTS: its own name); as UltraRAG's build, a
    parameter past INPUTS' names is left out (the client then sends none and the tool's default applies)."""
    names = [name.strip() for name in inputs.split(",")] if inputs else list(params)
    return {param: _named(name, parameters) for param, name in zip(params, names, strict=False)}


def tool_entry(params: Sequence[str], spec: str | None, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """One tool's ``input`` (and ``output``) entry from its parameter names and its output SPEC
    (``"inputs->outputs"``, or ``"outputs"`` alone)."""
    if not spec:
        return {"input": io_mapping(params, None, parameters)}
    sides = [side.strip() for side in spec.split("->")]
    if len(sides) > 2:
        raise ValueError(f"an output spec has at most one '->', got {spec!r}")
    entry: dict[str, Any] = {"input": io_mapping(params, sides[0] if len(sides) == 2 else None, parameters)}
    if sides[-1] and sides[-1].lower() != "none":
        entry["output"] = [_named(name.strip(), parameters) for name in sides[-1].split(",")]
    return entry


def server_config(parameter_file: str, tools: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The server.yaml content for TOOLS (tool name -> parameter names, in signature order): UltraRAG's
    retriever tools first, in its order, then needle's others as listed."""
    where = Path(parameter_file)
    parameters = read_parameters(where)
    default = str(where.parent / "src" / f"{where.parent.name}.py")
    specs = {**RETRIEVER_OUTPUTS, **NEEDLE_OUTPUTS}
    order = [name for name in RETRIEVER_OUTPUTS if name in tools] + [name for name in tools if name not in specs]
    order += [name for name in NEEDLE_OUTPUTS if name in tools]
    return {
        "path": parameters.get("path", default),
        "parameter": parameter_file,
        "tools": {name: tool_entry(tools[name], specs.get(name), parameters) for name in order},
        "prompts": {},
    }


def write_server_yaml(parameter_file: str, tools: Mapping[str, Sequence[str]]) -> Path:
    """Write ``server.yaml`` beside PARAMETER_FILE (crash-safely) and return its path.

    :raises NeedleError: The file cannot be read, or the server code its ``path`` names does not exist (UltraRAG's
        build refuses that too: `ultrarag run` could not launch it).
    """
    config = server_config(parameter_file, tools)
    code = config["path"]
    if not isinstance(code, str) or not Path(code).exists():
        raise NeedleError(
            f"server code not found: {code} (`ultrarag run` launches `python {code}`: put needle's drop-in there "
            f"or set path: in {parameter_file})"
        )
    out = Path(parameter_file).parent / "server.yaml"
    atomic_write_text(out, yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    return out
