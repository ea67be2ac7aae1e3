"""How a query enters a search pipeline: one plan, read from the pipeline file, for every entry point.

A search pipeline file names where a query goes (its Hayhooks ``inputs`` block), which component answers (its
``outputs`` block), which components take ``top_k`` and which embed the query (their init parameters).
``SearchPlan.feed`` turns one query (or a batch pipeline's list), a ``top_k`` and an instruction into the pipeline's
run input by one rule, and every entry point feeds through it (``needle_retrieval.pipelines.runner`` runs the result):
`needle search` and ``Searcher``, `needle serve`'s routes and MCP tools, and the Hayhooks wrappers.

- The query goes to every declared target socket, as sent: BM25 and the hybrid weighting see it unchanged.
- ``top_k`` goes to the answering component; each candidate generator before it gets ``max(top_k, its own)``, so a
  fusion always has at least its own number of candidates. None leaves every component its own (the file's).
- An instruction goes to the run input ``query_instruction`` of the query embedders (the targets whose init
  parameters hold one): it replaces the instruction in their init parameters, the one the index recorded, and never
  stacks on it. Modes without a query embedder (bm25) ignore it.

One rule for the instruction, at every entry point of needle's own (`needle search --query-instruction`,
``Searcher(query_instruction=)``, the ``query_instruction`` of ``POST /<mode>_search/run`` and of the Hayhooks
wrappers, the ``needle_<mode>_search`` MCP tools, ``QueryPipeline.run``): absent (None) means the instruction the
index recorded, ``""`` means explicitly none. A flag or field that can be left out says "the index's" by being left
out, so ``""`` is free to mean what it says.

UltraRAG's face is the one exception, read by ``ultrarag_instruction``: its ``query_instruction`` (``POST /search``,
the ``retriever_*`` MCP tools, a parameter file's key for `needle search --config`) is a string whose default is
``""``, so a client cannot leave it out and sends ``""`` whenever its own file names no instruction. There ``""``
is "not given" and keeps the index's recorded one, which is the instruction the index was built for (from the same
kind of file) and what those clients have always got from needle.
"""

from dataclasses import dataclass
from typing import Any

INSTRUCTION = "query_instruction"  # the query embedders' init parameter and run input
# What needle's own instruction field and flag do (POST /<mode>_search/run, the Hayhooks wrappers, --query-instruction)
INSTRUCTION_FIELD_HELP = 'put in front of the query by the query embedder, replacing the index\'s own; "" for none'


def ultrarag_instruction(value: str) -> str | None:
    """An UltraRAG ``query_instruction`` by the feed's rule: ``""``, UltraRAG's default, is "not given" (None: the
    index's recorded instruction); any other text replaces the recorded one."""
    return value or None


@dataclass(frozen=True)
class SearchPlan:
    """How one request feeds a search pipeline: where the query goes, who takes ``top_k`` and an instruction."""

    query_targets: tuple[tuple[str, str], ...]
    top_k_defaults: dict[str, int]
    answering: str
    embedders: tuple[str, ...] = ()  # query targets whose init parameters hold a `query_instruction`
    answer_socket: str = "documents"  # the answering component's output socket that holds the documents
    batch: bool = False  # a batch pipeline's plan: the query is a list, the documents one list per query

    @classmethod
    def of(cls, data: dict[str, Any], input_name: str = "query") -> "SearchPlan":
        """Read the plan from a pipeline dict's Hayhooks ``inputs``/``outputs`` blocks and init parameters;
        ``input_name="queries"`` reads a batch pipeline's."""
        targets = data["inputs"][input_name]
        pairs = tuple(_component_socket(target) for target in (targets if isinstance(targets, list) else [targets]))
        params = {name: spec.get("init_parameters") or {} for name, spec in data["components"].items()}
        defaults = {name: values["top_k"] for name, values in params.items() if "top_k" in values}
        embedders = tuple(dict.fromkeys(name for name, _ in pairs if INSTRUCTION in params.get(name, {})))
        answering, socket = _component_socket(data["outputs"]["documents"])
        return cls(pairs, defaults, answering, embedders, socket, input_name == "queries")

    def top_k_values(self, top_k: int) -> dict[str, int]:
        """The ``top_k`` of each component that takes one, for a request of ``top_k`` hits: the answering component
        gets ``top_k``, candidate generators before it keep at least their own count."""
        return {name: top_k if name == self.answering else max(top_k, own) for name, own in self.top_k_defaults.items()}

    def feed(
        self, query: str | list[str], top_k: int | None = None, instruction: str | None = None
    ) -> dict[str, dict[str, Any]]:
        """The pipeline's run input for one query (or a batch pipeline's list), by the rule of the module docstring.

        :param top_k: Hits per query; None: the pipeline's own.
        :param instruction: The query embedders' instruction, replacing the recorded one (``""``: none); None: the
            recorded one.
        """
        data: dict[str, dict[str, Any]] = {}
        for component, socket in self.query_targets:
            data.setdefault(component, {})[socket] = query
        if top_k is not None:
            for component, value in self.top_k_values(top_k).items():
                data.setdefault(component, {})["top_k"] = value
        if instruction is not None:
            for component in self.embedders:
                data[component][INSTRUCTION] = instruction
        return data


def _component_socket(address: str) -> tuple[str, str]:
    """``component.socket`` as a pair."""
    component, socket = address.split(".", 1)
    return component, socket
