"""The generated parts of the documentation (docs/hooks.py) say what the code does, and a page that names something
the code no longer has fails the build: a reader never sees a flag, a socket, a route or a parameter.yaml key that
is not (or no longer) real, nor misses one that is."""

import argparse
import importlib.util
import re
from collections.abc import Iterator
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import yaml

from tests.support.paths import DATA, REPO

HOOKS = REPO / "docs" / "hooks.py"
PARAMETER_PAGE = REPO / "docs" / "reference" / "parameter-yaml.md"
# parameter.yaml values that are free mappings handed on as they are (their keys are the provider's or Milvus's).
FREE_MAPPINGS = ("index_backend_configs.milvus.index_params.", "index_backend_configs.milvus.search_params.params.")


def load_hooks() -> ModuleType:
    """docs/hooks.py as mkdocs loads it: by path, since docs/ is not a package."""
    spec = importlib.util.spec_from_file_location("docs_hooks", HOOKS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = load_hooks()


def expand(markdown: str, src: str = "test.md") -> str:
    """Run the hook on MARKDOWN as mkdocs runs it on a page."""
    page = SimpleNamespace(file=SimpleNamespace(src_uri=src))
    return str(hooks.on_page_markdown(markdown, page=page, config={}, files=None))


def table_rows(markdown: str, header: str) -> dict[str, list[str]]:
    """The rows of the table under the bold HEADER line, by their first cell's code text."""
    block = markdown.split(f"**{header}**", 1)[1].split("\n\n", 2)[1]
    rows: dict[str, list[str]] = {}
    for line in block.splitlines()[2:]:
        cells = cells_of(line)
        rows[cells[0].strip("`")] = cells
    return rows


def cells_of(line: str) -> list[str]:
    """A table row's cells as Python-Markdown splits them: at pipes outside code spans that are not escaped."""
    cells: list[str] = []
    current, in_code = "", False
    for i, char in enumerate(line.strip()):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code and (i == 0 or line.strip()[i - 1] != "\\"):
            cells.append(current.strip())
            current = ""
        else:
            current += char
    return cells[1:]


def walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every (command path, parser) of the `needle` parser, read here independently of the hook."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, f"{path} {name}")


# --- the command line ------------------------------------------------------------------------------------------


def test_cli_reference_has_every_sub_command_flag_and_choice_of_the_parser() -> None:
    """Every sub-command (`needle pipelines show` included) has its section with its usage line, and every flag,
    positional argument and choice the parser takes is in it."""
    from needle_retrieval.cli.parser import parser

    page = expand("<!-- cli-reference -->")
    sections = dict(re.findall(r"^### `(needle[^`]*)`\n(.*?)(?=^### |\Z)", page, flags=re.M | re.S))
    commands = dict(walk(parser(), "needle"))
    assert set(sections) == set(commands)
    assert {"needle pipelines list", "needle pipelines show", "needle index", "needle serve"} <= set(sections)
    for path, command in commands.items():
        section = sections[path]
        assert f"usage: {command.prog}" in section, path
        for action in command._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            names = action.option_strings or [action.dest]
            assert all(name in section for name in names), (path, names)
            for choice in action.choices or ():
                assert f"`{choice}`" in section, (path, names, choice)


def test_cli_reference_shows_defaults_and_expanded_help() -> None:
    """A default is shown as the parser has it, and argparse's `%%` escapes are expanded as `--help` shows them."""
    page = expand("<!-- cli-reference -->")
    serve = page.split("### `needle serve`", 1)[1].split("### ", 1)[0]
    assert table_rows(serve, "Options")["--port PORT"][2] == "`1416`"
    assert table_rows(serve, "Options")["--host HOST"][2] == "`127.0.0.1`"
    assert "20% more memory" in page
    assert "%%" not in page


# --- component tables ------------------------------------------------------------------------------------------


def test_component_table_lists_the_sockets_haystack_gives_an_instance() -> None:
    """The table's inputs and outputs are the sockets Haystack creates for a real instance, with the same
    defaults; its init parameters are those of the constructor."""
    from components.retrievers.bm25.retriever import BM25Retriever
    from components.stores.bm25.document_store import BM25DocumentStore

    page = expand("<!-- component-table: components.retrievers.bm25.retriever.BM25Retriever -->")
    retriever: Any = BM25Retriever(BM25DocumentStore())  # Haystack adds the socket attributes at run time
    inputs = retriever.__haystack_input__._sockets_dict
    outputs = retriever.__haystack_output__._sockets_dict
    assert set(table_rows(page, "Inputs")) == set(inputs)
    assert set(table_rows(page, "Outputs")) == set(outputs)
    assert table_rows(page, "Inputs")["query"][2] == "required"
    assert table_rows(page, "Inputs")["top_k"][2] == "`None`"
    assert table_rows(page, "Outputs")["documents"][1] == "`list[Document]`"
    init = table_rows(page, "Init parameters")
    assert list(init) == ["document_store", "filters", "top_k", "filter_policy", "score_threshold"]
    assert init["filter_policy"][2] == "`FilterPolicy.REPLACE`"
    assert init["top_k"][3].startswith("Maximum number of documents per query")  # its `:param top_k:` text


def test_component_table_reads_outputs_that_init_declares() -> None:
    """A component whose outputs are set in `__init__` (the sentence-transformers query embedder) still gets them,
    and parameters documented only by its Haystack base class get that description."""
    from components.embedders.sentence_transformers_text_embedder import SentenceTransformersTextEmbedder

    page = expand(
        "<!-- component-table: "
        "components.embedders.sentence_transformers_text_embedder.SentenceTransformersTextEmbedder -->"
    )
    embedder: Any = SentenceTransformersTextEmbedder()  # Haystack adds the socket attributes at run time
    assert set(table_rows(page, "Outputs")) == set(embedder.__haystack_output__._sockets_dict) == {"embedding"}
    assert set(table_rows(page, "Inputs")) == set(embedder.__haystack_input__._sockets_dict)
    assert table_rows(page, "Init parameters")["suffix"][3]  # from Haystack's own docstring


def test_document_store_table_has_init_parameters_only() -> None:
    """A document store is not a pipeline component: its table lists its init parameters and no sockets."""
    import inspect

    from components.stores.faiss.document_store import FAISSDocumentStore

    page = expand("<!-- component-table: components.stores.faiss.document_store.FAISSDocumentStore -->")
    assert "**Inputs**" not in page
    expected = [name for name in inspect.signature(FAISSDocumentStore.__init__).parameters if name != "self"]
    assert list(table_rows(page, "Init parameters")) == expected


@pytest.mark.parametrize(
    "marker",
    [
        "<!-- component-table: components.retrievers.bm25.retriever.NoSuchRetriever -->",
        "<!-- component-table: components.no_such_family.Thing -->",
        "<!-- component-table: components.checks.check_query -->",  # exists, but is no class
        "<!-- component-table -->",  # no target
        "<!-- cli-reference: needle -->",  # a target where none belongs
    ],
)
def test_a_marker_naming_nothing_real_fails_the_build(marker: str) -> None:
    """A page that names a component the code no longer has (or a malformed marker) raises, so `mkdocs build
    --strict` stops instead of publishing a stale page."""
    with pytest.raises(hooks.DocsDriftError):
        expand(f"# Page\n\n{marker}\n")


def test_text_without_markers_is_left_as_it_is() -> None:
    """Pages without markers, other HTML comments included, come out unchanged."""
    markdown = "# Title\n\n<!-- a comment of the author's -->\n\n| a | b |\n|---|---|\n"
    assert expand(markdown) == markdown


# --- the HTTP API ----------------------------------------------------------------------------------------------


def test_http_reference_has_every_route_and_request_field_of_needle_serve() -> None:
    """The routes are those of the app `needle serve` builds (with `--reranker`'s), and each request body's fields
    are those of the model the route validates with."""
    from needle_retrieval.serve.cohere_rerank import CohereRerankRequest
    from needle_retrieval.serve.rerank import TEIRerankRequest
    from needle_retrieval.serve.run import SearchRequest
    from needle_retrieval.serve.ultrarag import UltraRAGSearchRequest

    page = expand("<!-- http-openapi -->")
    routes = set(re.findall(r"^### `([A-Z]+ /\S*)`", page, flags=re.M))
    assert routes == {
        "GET /status",
        "GET /status/{pipeline_name}",
        "POST /bm25_search/run",
        "POST /search",
        "POST /rerank",
        "POST /v1/rerank",
        "GET /info",
        "GET /health",
    }
    assert set(fields(page.split("#### SearchRequest", 1)[1])) == set(SearchRequest.model_fields)
    assert set(fields(page.split("#### UltraRAGSearchRequest", 1)[1])) == set(UltraRAGSearchRequest.model_fields)
    assert set(fields(page.split("### `POST /rerank`", 1)[1])) == set(TEIRerankRequest.model_fields)
    assert set(fields(page.split("### `POST /v1/rerank`", 1)[1])) == set(CohereRerankRequest.model_fields)


def fields(section: str) -> list[str]:
    """The field names of the first fields table in SECTION."""
    table = section.split("| Field |", 1)[1].split("\n\n", 1)[0]
    return [cells_of(line)[0].strip("`") for line in table.splitlines()[2:]]


# --- parameter.yaml --------------------------------------------------------------------------------------------


def leaves(data: dict[str, Any], prefix: str = "") -> Iterator[str]:
    """The key path of every value of a parsed parameter file that is not a block of further keys."""
    for key, value in data.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


def test_parameter_yaml_keys_cover_ultrarags_own_file() -> None:
    """Every key of UltraRAG HEAD's parameter.yaml (tests/data holds a copy) is in the generated key list, so the
    reference cannot leave one out."""
    keys = hooks.yaml_keys()
    data = yaml.safe_load((DATA / "ultrarag_parameter.yaml").read_text(encoding="utf-8"))
    missing = [path for path in leaves(data) if path not in keys and not path.startswith(FREE_MAPPINGS)]
    assert missing == []


def test_parameter_yaml_page_must_describe_every_accepted_key() -> None:
    """The real page describes every key the code accepts; a page that stops describing one fails the build,
    naming the key."""
    page = PARAMETER_PAGE.read_text(encoding="utf-8")
    assert "`websearch_backend_configs.zhipuai.content_size`" in expand(page, "reference/parameter-yaml.md")
    stale = page.replace("`backend_configs.openai.concurrency`", "concurrency")
    with pytest.raises(hooks.DocsDriftError, match=r"backend_configs\.openai\.concurrency"):
        expand(stale, "reference/parameter-yaml.md")


def test_generated_cells_cannot_break_a_table() -> None:
    """A pipe or an angle bracket in help or docstring text is escaped outside code and kept inside it."""
    assert hooks.prose("qrels/<split>.tsv or `a | b`, x | y") == "qrels/&lt;split>.tsv or `a | b`, x \\| y"
    assert hooks.table(["A"], [["1\n2"]]).splitlines()[-1] == "| 1 2 |"


def test_every_component_table_of_the_pages_expands() -> None:
    """Every component-table marker of the pages in this checkout names a class the hook can describe."""
    pages = [path for path in (REPO / "docs").rglob("*.md") if "component-table:" in path.read_text(encoding="utf-8")]
    assert pages
    for path in pages:
        for target in re.findall(r"<!--\s*component-table:\s*(\S+)\s*-->", path.read_text(encoding="utf-8")):
            assert "**Init parameters**" in expand(f"<!-- component-table: {target} -->", str(path)), target
