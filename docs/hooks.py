"""mkdocs hook: expand the markers of the documentation pages into content generated from the code at build time.

A reference page that is written by hand drifts from the code it describes; these parts are generated on every
build instead, and a marker naming something that no longer exists raises, so ``mkdocs build --strict`` fails:

- ``<!-- component-table: dotted.path.Class -->``: a component's input and output sockets and its init parameters
  (a document store's init parameters), each with its ``:param name:`` text from the docstrings;
- ``<!-- cli-reference -->``: every sub-command of ``needle`` with its usage, arguments, help, choices and defaults,
  walked from ``needle_retrieval.cli.parser.parser()``;
- ``<!-- http-openapi -->``: the routes and schemas of ``needle serve``, from the OpenAPI schema of the app it serves;
- ``<!-- parameter-yaml-keys -->``: every key of UltraRAG's parameter.yaml that needle accepts, from the tuples and
  type tables its checks use; the build fails if the page does not describe one of them.
"""

import argparse
import contextlib
import enum
import importlib
import inspect
import io
import json
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

MARKER = re.compile(r"<!--\s*(component-table|cli-reference|http-openapi|parameter-yaml-keys)(?::\s*(\S+))?\s*-->")
QUALIFIER = re.compile(r"\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_])")  # `haystack.dataclasses.Document` -> `Document`
PARAM = re.compile(r"^\s*:param\s+(\w+):(.*)$")
LIMIT_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems")


class DocsDriftError(Exception):
    """A marker names something the code does not have (or a page misses what the code has): fix the page."""


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs 1.6 hook: replace every marker of the page's markdown with its generated markdown."""

    def expand(match: re.Match[str]) -> str:
        name, target = match.group(1), match.group(2)
        if (name == "component-table") != (target is not None):
            raise DocsDriftError(f"{page.file.src_uri}: marker {match.group(0)!r} needs a target iff component-table")
        if name == "component-table":
            return component_table(str(target))
        if name == "parameter-yaml-keys":
            return parameter_yaml_keys(MARKER.sub("", markdown))
        return {"cli-reference": cli_reference, "http-openapi": http_openapi}[name]()

    return MARKER.sub(expand, markdown)


# --- shared helpers --------------------------------------------------------------------------------------------


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A markdown table of ROWS, each cell made safe for it by ``prose``."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(prose(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def prose(text: str) -> str:
    """Help or docstring TEXT for markdown, on one line: outside code spans ``<`` is escaped (so `<split>` is not
    taken for an HTML tag and swallowed) and so is ``|`` (a table cell's end); inside them both stay as they are,
    since Python-Markdown's tables do not split a row at a pipe inside backticks."""
    parts = re.split(r"(`+[^`]*`+)", " ".join(text.split()))
    return "".join(part if part.startswith("`") else part.replace("<", "&lt;").replace("|", "\\|") for part in parts)


def code(text: str) -> str:
    """TEXT as inline code (empty stays empty)."""
    return f"`{text}`" if text else ""


def resolve(dotted: str) -> Any:
    """The object a dotted path names (``package.module.Class``), or DocsDriftError."""
    module_name, _, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as error:
        raise DocsDriftError(f"component-table: {dotted!r} does not exist ({error})") from None


# --- component tables ------------------------------------------------------------------------------------------


def type_text(annotation: Any) -> str:
    """An annotation as written, without module qualifiers (string annotations are kept as the source has them)."""
    if annotation is inspect.Parameter.empty:
        return ""
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return QUALIFIER.sub("", text)


def default_text(value: Any) -> str:
    """A default value as a user writes it: ``FilterPolicy.REPLACE``, ``Secret.from_env_var([...])``, a repr."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if type(value).__name__ == "EnvVarSecret":
        data = value.to_dict()
        return f"Secret.from_env_var({data['env_vars']}, strict={data['strict']})"
    return repr(value)


def param_docs(cls: type, method: str) -> dict[str, str]:
    """Each ``:param name:`` text of METHOD's docstrings in CLS and its bases (the class's own first: a subclass
    of a Haystack component documents its own parameters and leaves the rest to Haystack's docstring), its
    continuation lines joined into one line."""
    found: dict[str, str] = {}
    for owner in cls.__mro__:
        if method not in owner.__dict__:
            continue
        seen: dict[str, str] = {}
        current = None
        for line in (inspect.getdoc(owner.__dict__[method]) or "").splitlines():
            match = PARAM.match(line)
            if match:
                current = match.group(1)
                seen[current] = match.group(2).strip()
            elif current and line.startswith((" ", "\t")) and line.strip():
                seen[current] = f"{seen[current]} {line.strip()}".strip()
            else:
                current = None
        found = seen | found
    return found


def parameters(function: Callable[..., Any]) -> Iterator[inspect.Parameter]:
    """FUNCTION's named parameters, without ``self``, ``*args`` and ``**kwargs`` (which make no socket)."""
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name != "self" and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            yield parameter


def output_sockets(cls: type) -> dict[str, Any]:
    """The output sockets (name -> type) of a component class: ``@component.output_types`` on ``run``; when
    ``__init__`` sets them instead (``component.set_output_types``), those of an instance built with the
    defaults, which Haystack's components build without loading anything."""
    cached = getattr(cls.run, "_output_types_cache", None)  # type: ignore[attr-defined]
    if cached is None:
        if any(p.default is p.empty for p in parameters(cls.__init__)):  # type: ignore[misc]
            raise DocsDriftError(f"component-table: {cls.__name__} has no declared outputs and no default instance")
        cached = cls().__haystack_output__._sockets_dict  # Haystack's own pipelines read it so
    return {name: socket.type for name, socket in cached.items()}


def signature_rows(cls: type, method: str) -> list[list[str]]:
    """One row per parameter of CLS's METHOD: name, type, default (or "required") and its ``:param:`` text."""
    docs = param_docs(cls, method)
    return [
        [
            code(p.name),
            code(type_text(p.annotation)),
            "required" if p.default is p.empty else code(default_text(p.default)),
            docs.get(p.name, ""),
        ]
        for p in parameters(getattr(cls, method))
    ]


def component_table(dotted: str) -> str:
    """Inputs, outputs and init parameters of the component (or document store) DOTTED names."""
    cls = resolve(dotted)
    if not inspect.isclass(cls):
        raise DocsDriftError(f"component-table: {dotted!r} is not a class")
    out = []
    if type(cls).__name__ == "ComponentMeta":  # a @component (a document store is not one)
        out += ["**Inputs** (`run`)\n", table(["Input", "Type", "Default", "Description"], signature_rows(cls, "run"))]
        rows = [[code(name), code(type_text(kind))] for name, kind in output_sockets(cls).items()]
        out += ["**Outputs**\n", table(["Output", "Type"], rows)]
    rows = signature_rows(cls, "__init__")
    out += ["**Init parameters**\n", table(["Parameter", "Type", "Default", "Description"], rows)]
    return "\n".join(out)


# --- the needle command ----------------------------------------------------------------------------------------


def commands(
    parser: argparse.ArgumentParser, path: str, help_text: str
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """Every (command path, help, parser) under PARSER, depth first: ``needle``, ``needle index``, ...,
    ``needle pipelines list``."""
    yield path, help_text, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield from commands(sub, f"{path} {name}", helps.get(name, ""))


def argument_row(parser: argparse.ArgumentParser, action: argparse.Action) -> list[str]:
    """One table row: the argument as typed, its help (with argparse's %(...)s expanded) and choices, its default."""
    formatter = parser._get_formatter()
    default_metavar = action.dest.upper() if action.option_strings else action.dest  # as argparse names them
    metavar = formatter._format_args(action, default_metavar) if action.nargs != 0 else ""
    name = ", ".join(action.option_strings) + (f" {metavar}" if metavar and action.option_strings else metavar)
    text = formatter._expand_help(action) if action.help and action.help != argparse.SUPPRESS else ""
    if action.choices is not None:
        text += f" (one of: {', '.join(code(str(choice)) for choice in action.choices)})"
    shown = action.nargs != 0 and not any(action.default is unset for unset in (None, False, argparse.SUPPRESS))
    return [code(name), text, code(str(action.default)) if shown else ""]


def usage(command: argparse.ArgumentParser) -> str:
    """COMMAND's usage line as ``--help`` prints it, wrapped at a fixed width (not the terminal's, which argparse
    reads from COLUMNS) so that every build writes the same page."""
    formatter = command.formatter_class(prog=command.prog, width=100)  # type: ignore[call-arg]
    formatter.add_usage(command.usage, command._actions, command._mutually_exclusive_groups)
    return formatter.format_help().strip()


def cli_reference() -> str:
    """The reference of every sub-command of ``needle``, generated from its argparse parser."""
    from needle_retrieval.cli.parser import parser

    out = []
    top = parser()
    for path, help_text, command in commands(top, "needle", top.description or ""):
        out += [f"### `{path}`\n", f"{prose(help_text)}\n", "```text", usage(command), "```\n"]
        actions = [a for a in command._actions if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)]
        positional = [argument_row(command, a) for a in actions if not a.option_strings]
        options = [argument_row(command, a) for a in actions if a.option_strings]
        if positional:
            out += ["**Arguments**\n", table(["Argument", "Description", "Default"], positional)]
        if options:
            out += ["**Options**\n", table(["Option", "Description", "Default"], options)]
    return "\n".join(out)


# --- the HTTP API of needle serve --------------------------------------------------------------------------------


@cache
def served_openapi() -> dict[str, Any]:
    """The OpenAPI schema of the app ``needle serve`` runs, built as the command builds it on a one-document BM25
    index in a temporary directory (no model is loaded). ``--reranker``'s routes need a loaded cross-encoder to
    serve, not to be described: they are added with a stand-in for the model that no request ever reaches.
    The build's progress lines are kept out of the mkdocs output."""
    from needle_retrieval import build_index
    from needle_retrieval.defaults import DEFAULT_MODEL
    from needle_retrieval.serve.rerank import DEFAULT_MAX_BATCH, RerankService, rerank_route
    from needle_retrieval.serve.server import LOOPBACK_NAMES, search_app

    with tempfile.TemporaryDirectory(prefix="needle-docs-") as tmp, contextlib.redirect_stderr(io.StringIO()):
        corpus = Path(tmp, "corpus.jsonl")
        corpus.write_text(json.dumps({"id": "1", "contents": "a needle in a haystack"}) + "\n", encoding="utf-8")
        build_index(corpus, Path(tmp, "index"), model=DEFAULT_MODEL, overwrite=False, dense=False, bm25=True)
        app, _, _ = search_app(Path(tmp, "index"), LOOPBACK_NAMES[0], [], None, None, False)
        rerank_route(app, cast(RerankService, SimpleNamespace(info=None, max_batch=DEFAULT_MAX_BATCH)))
        return app.openapi()


def schema_type(schema: dict[str, Any]) -> str:
    """A JSON schema as a short type: ``string``, ``list[string]``, ``integer | null``, ``SearchRequest``, ..."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(schema_type(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(json.dumps(value) for value in schema["enum"])
    if schema.get("type") == "array":
        return f"list[{schema_type(schema.get('items', {}))}]"
    if "properties" in schema and "title" in schema:
        return str(schema["title"])
    if schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"dict[string, {schema_type(schema['additionalProperties'])}]"
    return str(schema.get("type", "any"))


def limits(field: dict[str, Any]) -> str:
    """The bounds a field's schema (or any of its ``anyOf`` options) sets: ``minimum 1, maximum 10000``, ..."""
    options = [field, *field.get("anyOf", ())]
    return ", ".join(f"{key} {value}" for option in options for key, value in option.items() if key in LIMIT_KEYS)


def fields_table(schema: dict[str, Any]) -> str:
    """The fields of an object schema: name, type, required or default, limits, description."""
    required = set(schema.get("required", ()))
    rows = [
        [
            code(name),
            code(schema_type(field)),
            "required" if name in required else code(json.dumps(field["default"])) if "default" in field else "",
            limits(field),
            str(field.get("description", "")),
        ]
        for name, field in schema.get("properties", {}).items()
    ]
    return table(["Field", "Type", "Default", "Limits", "Description"], rows) if rows else "(no fields)\n"


def schema_link(schema: dict[str, Any]) -> str:
    """A schema's type, linked to its section under Schemas when it is a named one."""
    name = code(schema_type(schema))
    return f"[{name}](#{schema_type(schema).lower()})" if "$ref" in schema else name


def operation(path: str, method: str, spec: dict[str, Any]) -> list[str]:
    """One route: its summary, its JSON request body (a schema name, or the fields of an inline one), responses."""
    out = [f"### `{method.upper()} {path}`\n", f"{prose(spec.get('summary', ''))}\n"]
    body = spec.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body is not None:
        out.append(f"**Request body** (JSON): {schema_link(body)}\n")
        for option in body.get("anyOf", [body]):  # /rerank takes TEI's body or the Cohere-style one
            if "properties" in option:
                out.append(fields_table(option))
    rows = []
    for status, answer in spec.get("responses", {}).items():
        content = (answer.get("content") or {}).get("application/json", {}).get("schema")
        rows.append([code(status), str(answer.get("description", "")), schema_link(content) if content else ""])
    out += ["**Responses**\n", table(["Status", "Meaning", "Body (JSON)"], rows)]
    return out


def http_openapi() -> str:
    """Every route of ``needle serve``'s OpenAPI schema, then every schema they name, field by field."""
    api = served_openapi()
    out = []
    for path, methods in api["paths"].items():
        for method, spec in methods.items():
            out += operation(path, method, spec)
    out.append("### Schemas\n")
    for name, schema in api.get("components", {}).get("schemas", {}).items():
        out += [f"#### {name}\n", f"{prose(schema.get('description', ''))}\n", fields_table(schema)]
    return "\n".join(out)


# --- UltraRAG's parameter.yaml ---------------------------------------------------------------------------------


def yaml_keys() -> dict[str, str]:
    """Every key path of parameter.yaml that needle accepts -> what its value must be ("" where the reader checks
    it itself), from the key tuples and type tables of ``needle_retrieval.ultrarag`` and its embedder spec."""
    from needle_retrieval.ultrarag import config, stores, websearch
    from needle_retrieval.ultrarag import embedder_spec as factory

    def block(prefix: str, names: Iterable[str], types: Mapping[str, Any]) -> dict[str, str]:
        return {f"{prefix}.{k}": types[k].description if k in types else "" for k in names}

    keys = dict.fromkeys(config.TOP_LEVEL, "")
    for backend, options in factory.OPTIONS.items():
        extra = config.BLOCK_EXTRA.get(backend, {})
        keys |= block(f"backend_configs.{backend}", (*options, *extra), factory.TYPES[backend] | extra)
    encode = "backend_configs.sentence_transformers.sentence_transformers_encode"
    keys |= block(encode, factory.ENCODE_OPTIONS, factory.ENCODE_TYPES)
    keys |= block("index_backend_configs.faiss", stores.FAISS_KEYS, stores.TYPES["faiss"])
    keys |= block("index_backend_configs.milvus", stores.MILVUS_KEYS, stores.TYPES["milvus"])
    keys |= block("index_backend_configs.milvus.search_params", stores.SEARCH_PARAM_KEYS, {})
    for provider, names in websearch.KEYS.items():
        keys |= block(f"websearch_backend_configs.{provider}", names, websearch.TYPES)
    return keys


def parameter_yaml_keys(page: str) -> str:
    """The table of every accepted key and its value type; raises if PAGE (without its markers) does not name a
    key as `` `key.path` ``, so a key the code starts accepting cannot stay undocumented."""
    keys = yaml_keys()
    missing = [key for key in keys if f"`{key}`" not in page]
    if missing:
        raise DocsDriftError(f"parameter-yaml-keys: the page does not describe {', '.join(missing)}")
    return table(["Key", "Value"], [[code(key), kind or "—"] for key, kind in keys.items()])
