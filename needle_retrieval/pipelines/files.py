"""Load the shipped YAML pipelines (``needle_retrieval.pipelines.shipped``) as templates, fill in their paths and
parameters, build them.

The CLI drives exactly the pipelines a user can load with ``Pipeline.loads`` or serve with Hayhooks: it
only overrides init parameters (index paths, model name) before building, and feeds ``top_k`` and the query
instruction at run time (``needle_retrieval.pipelines.feed``).
"""

from copy import deepcopy
from pathlib import Path
from typing import Any, overload

import yaml
from haystack import Document, Pipeline

import components  # noqa: F401  (allowlists our modules for deserialization)
from needle_retrieval.pipelines.feed import SearchPlan
from needle_retrieval.pipelines.runner import SearchRunner
from needle_retrieval.pipelines.shipped import read

# The init parameters of our document stores that name a place: FAISS and BM25 directories, a Milvus Lite database.
STORE_PLACES = ("path", "document_store_path", "uri")


def load_template(name: str) -> dict[str, Any]:
    """Parse the shipped ``<name>.yaml`` into a pipeline dict (Hayhooks' inputs/outputs blocks included)."""
    data = yaml.safe_load(read(name))
    if not isinstance(data, dict):
        raise ValueError(f"shipped {name}.yaml: a pipeline file must hold a mapping, not {type(data).__name__}")
    return data


def set_init_param(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set an init parameter addressed as ``component.param`` or ``component.nested_object.param``.

    Nested serialized objects (``{"type": ..., "init_parameters": {...}}``, e.g. a document store inside a
    retriever) are walked through their ``init_parameters``.
    """
    name, *keys = dotted.split(".")
    node = data["components"][name]["init_parameters"]
    for key in keys[:-1]:
        node = node[key]
        if "init_parameters" in node:
            node = node["init_parameters"]
    node[keys[-1]] = value


def build(data: dict[str, Any]) -> Pipeline:
    """Build a Pipeline from a (possibly modified) template; Hayhooks' blocks are not Haystack's concern."""
    core = {k: v for k, v in data.items() if k not in ("inputs", "outputs")}
    return Pipeline.from_dict(core)


def rebased(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """A copy of DATA whose document stores' relative places (``STORE_PLACES``) are resolved against BASE.

    The search pipelines `needle index` writes name their stores relative to the index directory, so that the
    index can be moved; a server that must not depend on its working directory runs them rebased onto it.
    Absolute paths and server URLs (``http://...``) are kept as they are.
    """
    copy = deepcopy(data)
    for spec in copy["components"].values():
        store = (spec.get("init_parameters") or {}).get("document_store")
        params = store.get("init_parameters") if isinstance(store, dict) else None
        if not isinstance(params, dict):
            continue
        for key in STORE_PLACES:
            place = params.get(key)
            if isinstance(place, str) and place and "://" not in place and not Path(place).is_absolute():
                params[key] = str(base / place)
    return copy


def dump(data: dict[str, Any], path: Path) -> None:
    """Write a filled-in pipeline (with its Hayhooks blocks) as YAML, e.g. next to an index for serving."""
    with path.open("w", encoding="utf-8") as f:
        yaml.safe_dump(data, f, sort_keys=False)


class QueryPipeline:
    """A pipeline that declares a ``query`` input and a ``documents`` output (Hayhooks' blocks), run per query.

    With ``input_name="queries"`` it drives a batch pipeline instead: one run takes every query and its
    ``documents`` output holds one list per query. It is fed by its ``SearchPlan`` (``needle_retrieval.pipelines.feed``)
    and run by ``needle_retrieval.pipelines.runner``: stage by stage (``direct``) when every component is one of this
    project's, with ``Pipeline.run`` otherwise; the components get the same inputs and give the same documents.
    """

    def __init__(self, data: dict[str, Any], source: str, input_name: str = "query", warm_up: bool = True) -> None:
        """Check the declared blocks and build the pipeline; ``warm_up=False`` leaves loading models to the caller
        (or to the first run)."""
        inputs, outputs = data.get("inputs") or {}, data.get("outputs") or {}
        if input_name not in inputs or "documents" not in outputs:
            raise ValueError(
                f"pipeline {source} must declare a `{input_name}` input and a `documents` output "
                f"(inputs: {{{input_name}: component.socket}}, outputs: {{documents: component.documents}}); "
                f"it declares inputs {sorted(inputs) or 'none'} and outputs {sorted(outputs) or 'none'}"
            )
        self.pipeline = build(data)
        if warm_up:
            self.pipeline.warm_up()
        self.runner = SearchRunner(self.pipeline, SearchPlan.of(data, input_name), warm=warm_up)
        self.batched = self.runner.plan.batch

    @overload
    def run(self, query: str, top_k: int | None = None, instruction: str | None = None) -> list[Document]: ...

    @overload
    def run(
        self, query: list[str], top_k: int | None = None, instruction: str | None = None
    ) -> list[list[Document]]: ...

    def run(
        self, query: str | list[str], top_k: int | None = None, instruction: str | None = None
    ) -> list[Document] | list[list[Document]]:
        """The documents output for the query (or all queries), fed by ``SearchPlan.feed``: ``top_k`` hits (None:
        the pipeline's own), the query embedders' ``instruction`` in place of the recorded one (None: that one)."""
        return self.runner.documents(query, top_k, instruction)

    def run_many(
        self, queries: list[str], top_k: int | None = None, instruction: str | None = None
    ) -> list[list[Document]]:
        """One result list per query, in query order: a single run for a batch pipeline."""
        if self.batched:
            return self.run(queries, top_k, instruction)
        return [self.run(query, top_k, instruction) for query in queries]
