"""One engine for a search query: a built search pipeline fed by its ``SearchPlan`` and run.

Every entry point runs its queries here: `needle search` and ``Searcher`` (through
``needle_retrieval.pipelines.files``'s ``QueryPipeline``), `needle serve`'s ``POST /<mode>_search/run``, ``POST
/search`` and MCP tools, and the Hayhooks wrappers of `hayhooks run`. A pipeline of this project's components runs stage
by stage (``DirectRun``), any other with Haystack's ``Pipeline.run``; both answer in ``Pipeline.run``'s shape with the
answering component's outputs included, which is what the served routes return as ``result``.
"""

from typing import Any

from haystack import Document, Pipeline

from needle_retrieval.pipelines.direct_run import DirectRun
from needle_retrieval.pipelines.feed import SearchPlan

Outputs = dict[str, Any]  # a pipeline run's answer: component name -> its outputs by socket


class SearchRunner:
    """A built search pipeline, its feed plan and how it runs (``direct``: the stages, or None for ``Pipeline.run``)."""

    def __init__(self, pipeline: Pipeline, plan: SearchPlan, *, warm: bool = False, wrap_errors: bool = False) -> None:
        """Plan the direct run of PIPELINE fed by PLAN.

        :param warm: The pipeline is warmed up already; otherwise the first direct run warms it up, as
            ``Pipeline.run`` does on every run.
        :param wrap_errors: A component's error comes wrapped in a PipelineRuntimeError naming the component, as
            ``Pipeline.run`` raises it, on the direct path too (the served routes map the wrapped error to HTTP).
        """
        self.pipeline = pipeline
        self.plan = plan
        self.direct = DirectRun.plan(pipeline, set(plan.query_targets))
        self.warm = warm
        self.wrap_errors = wrap_errors
        graph = pipeline.graph
        # The retrievers: components with a document store and a run-time `filters` input (a request's tenant).
        self.filter_targets = tuple(
            name
            for name, component in pipeline.walk()
            if getattr(component, "document_store", None) is not None
            and "filters" in graph.nodes[name]["input_sockets"]
        )
        # Output sockets that feed another component: Pipeline.run leaves them out of its answer.
        self._consumed = {
            name: {edge["from_socket"].name for _, _, edge in graph.out_edges(name, data=True)} for name in graph.nodes
        }

    def run(
        self,
        query: str | list[str],
        top_k: int | None = None,
        instruction: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> Outputs:
        """Feed one query (or a batch pipeline's list) by the plan's rule and run the pipeline; FILTERS (a request's
        tenant, ``needle_retrieval.search.inputs.tenant_filters``) go to every retriever for this run (None: none).

        :returns: What ``Pipeline.run(feed, include_outputs_from={answering})`` returns: every output no other
            component consumed, by component, and all of the answering component's.
        """
        answering = self.plan.answering
        outputs = self._outputs(query, top_k, instruction, filters=filters)
        if self.direct is None:
            return outputs  # Pipeline.run's answer already
        answer: Outputs = {}
        for name, produced in outputs.items():
            kept = produced if name == answering else self._unconsumed(name, produced)
            if kept or name == answering:
                answer[name] = kept
        return answer

    def documents(
        self,
        query: str | list[str],
        top_k: int | None = None,
        instruction: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[Document] | list[list[Document]]:
        """The answering component's documents for ``run``'s arguments: one list, or one per query of a batch."""
        outputs = self._outputs(query, top_k, instruction, filters=filters)  # no answer shaping: documents only
        documents: list[Document] | list[list[Document]] = outputs[self.plan.answering][self.plan.answer_socket]
        return documents

    def every_output(
        self, query: str | list[str], instruction: str | None = None, also: frozenset[str] = frozenset()
    ) -> Outputs:
        """A run's outputs with at least all of the answering component's and of the components named in ALSO (an
        opening's probe reads the query embedder's, ``needle_retrieval.search.opening``)."""
        return self._outputs(query, None, instruction, also)

    def _outputs(
        self,
        query: str | list[str],
        top_k: int | None,
        instruction: str | None,
        also: frozenset[str] = frozenset(),
        filters: dict[str, Any] | None = None,
    ) -> Outputs:
        """Run the fed pipeline: every component's outputs on the direct path, ``Pipeline.run``'s answer (the
        answering component's outputs and ALSO's included) otherwise."""
        feed = self.plan.feed(query, top_k, instruction)
        if filters is not None:
            for name in self.filter_targets:
                feed.setdefault(name, {})["filters"] = filters
        if self.direct is None:
            result: Outputs = self.pipeline.run(feed, include_outputs_from={self.plan.answering, *also})
            return result
        if not self.warm:
            self.pipeline.warm_up()
            self.warm = True
        return self.direct.run(feed, wrap_errors=self.wrap_errors)

    def _unconsumed(self, name: str, produced: dict[str, Any]) -> dict[str, Any]:
        """NAME's outputs that no connection hands on."""
        consumed = self._consumed[name]
        return {socket: value for socket, value in produced.items() if socket not in consumed}
