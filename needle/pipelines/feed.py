"""How a query enters a search pipeline: one plan, read from the pipeline file, for every entry point.

A search pipeline file names where a query goes (its Hayhooks ``inputs`` block), which component answers (its
``outputs`` block) and which components take ``top_k`` (their init parameters). ``SearchPlan.feed`` turns one query
(or a batch pipeline's list), an instruction and a ``top_k`` into the pipeline's run input by one rule.
"""

from dataclasses import dataclass
from typing import Any

EMBEDDER = "embedder"  # the component that embeds the query in every search template (fill_search_pipeline's name)


@dataclass(frozen=True)
class SearchPlan:
    """How one request feeds a search pipeline: where the query goes and which components take ``top_k``."""

    query_targets: tuple[tuple[str, str], ...]
    top_k_defaults: dict[str, int]
    answering: str

    @classmethod
    def of(cls, data: dict[str, Any], input_name: str = "query") -> "SearchPlan":
        """Read the plan from a pipeline dict's Hayhooks ``inputs``/``outputs`` blocks and init parameters;
        ``input_name="queries"`` reads a batch pipeline's."""
        targets = data["inputs"][input_name]
        targets = targets if isinstance(targets, list) else [targets]
        defaults = {
            name: spec["init_parameters"]["top_k"]
            for name, spec in data["components"].items()
            if "top_k" in spec.get("init_parameters", {})
        }
        answering = data["outputs"]["documents"].split(".", 1)[0]
        return cls(tuple(tuple(t.split(".", 1)) for t in targets), defaults, answering)

    def feed(self, query: str | list[str], top_k: int | None, instruction: str = "") -> dict[str, dict[str, Any]]:
        """Pipeline input for one query (or a batch pipeline's list); a request's top_k goes to the answering
        component, and candidate generators before it keep at least their own count (the rule
        ``fill_search_pipeline`` applies). ``instruction`` goes in front of the text the query embedder encodes
        only: BM25 and the hybrid weighting see the query as sent."""
        data: dict[str, dict[str, Any]] = {}
        for component, socket in self.query_targets:
            text = with_instruction(query, instruction) if component == EMBEDDER else query
            data.setdefault(component, {})[socket] = text
        if top_k is not None:
            for component, default in self.top_k_defaults.items():
                data.setdefault(component, {})["top_k"] = top_k if component == self.answering else max(top_k, default)
        return data


def with_instruction(query: str | list[str], instruction: str) -> str | list[str]:
    """The query (or each query) with ``instruction`` in front, as UltraRAG's ``query_instruction`` is applied."""
    if not instruction:
        return query
    return f"{instruction}{query}" if isinstance(query, str) else [f"{instruction}{q}" for q in query]
