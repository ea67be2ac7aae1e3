"""DirectRun: an acyclic pipeline of this project's components run stage by stage, outputs handed straight on.

``Pipeline.run`` costs 0.15-0.3 ms per component per call on Python 3.11 whatever the component does: it
deep-copies every input (a copy per list element, with runtime Protocol checks), re-checks every socket of every
component to pick the next one, warms each component up again and opens a tracing span per component. A hybrid
query runs four components, so that is about a millisecond of a ~20 ms query. A BM25 query alone costs less
than that overhead: on SciFact, one query through the one-component BM25 batch pipeline took 67 µs in the
component and 197 µs through ``Pipeline.run`` (top_k 10; 0.3 ms against 0.6 ms at top_k 100), while a
``DirectRun`` took what the component took.

Nothing in a query pipeline needs that machinery when the graph has no cycle, no socket takes several senders
(variadic or greedy) and every component is one of ours, whose ``run`` never changes its inputs (tested with
each component): running the components in topological order, each with the query inputs it was fed and the
outputs of its senders, gives the same documents. Haystack's DocumentWriter counts as ours when its store is
one of ours: it only hands the documents to the store's ``write_documents``, which copies what it keeps. An index
pipeline (reader, embedder, writer) run once per 10,000-document chunk so skips deep-copying every chunk twice,
a fifth of a BM25 build. Any other pipeline (Haystack's DocumentJoiner in rrf_search.yaml, a Milvus retriever, a
conversion between sockets) keeps ``Pipeline.run``.
"""

from typing import Any

import networkx as nx
from haystack import Pipeline
from haystack.components.writers import DocumentWriter
from haystack.core.errors import PipelineRuntimeError

OURS = "components."  # the package whose components promise never to change their inputs
Edge = tuple[str, str, str]  # receiving socket, sending component, its output socket


class DirectRun:
    """The components of a pipeline in topological order, each with the senders of its sockets."""

    def __init__(self, steps: list[tuple[str, Any, list[Edge]]]) -> None:
        """Hold the plan ``plan`` made: (name, component, incoming edges) per step."""
        self.steps = steps

    @classmethod
    def plan(cls, pipeline: Pipeline, fed: set[tuple[str, str]]) -> "DirectRun | None":
        """
        The plan for ``pipeline`` fed at the ``(component, socket)`` pairs in ``fed``, or None when it must keep
        ``Pipeline.run``: a cycle, a socket with several senders or a conversion, a component not of this project,
        or a mandatory socket that neither ``fed`` nor a connection fills (``Pipeline.run`` names that error).
        """
        graph = pipeline.graph
        if not nx.is_directed_acyclic_graph(graph):
            return None
        steps = []
        for name in nx.topological_sort(graph):
            node = graph.nodes[name]
            instance = node["instance"]
            sockets = node["input_sockets"]
            if not _trusted(instance):
                return None
            if any(socket.is_variadic or socket.is_greedy for socket in sockets.values()):
                return None
            edges = []
            for sender, _, data in graph.in_edges(name, data=True):
                if data.get("conversion_strategy") is not None:
                    return None
                edges.append((data["to_socket"].name, sender, data["from_socket"].name))
            filled = {socket for socket, _, _ in edges} | {socket for component, socket in fed if component == name}
            if any(socket.is_mandatory and key not in filled for key, socket in sockets.items()):
                return None
            steps.append((name, instance, edges))
        return cls(steps)

    def run(self, feed: dict[str, dict[str, Any]], wrap_errors: bool = False) -> dict[str, dict[str, Any]]:
        """Run every component once, in order; returns each component's outputs by name.

        With ``wrap_errors`` a component's error comes wrapped in a PipelineRuntimeError naming the component (the
        error as ``__cause__``), as ``Pipeline.run`` raises it, for callers written against ``Pipeline.run``.
        """
        outputs: dict[str, dict[str, Any]] = {}
        for name, instance, edges in self.steps:
            inputs = dict(feed.get(name, {}))
            for socket, sender, output in edges:
                if output in outputs[sender]:
                    inputs[socket] = outputs[sender][output]
            try:
                outputs[name] = instance.run(**inputs)
            except Exception as error:
                if not wrap_errors:
                    raise
                raise PipelineRuntimeError.from_exception(name, type(instance), error) from error
        return outputs


def _trusted(instance: object) -> bool:
    """Whether a component never changes its inputs: ours, or Haystack's DocumentWriter into one of our stores."""
    if isinstance(instance, DocumentWriter):
        return type(instance.document_store).__module__.startswith(OURS)
    return type(instance).__module__.startswith(OURS)
