"""``UltraRAGRemoteRetriever``: one query to a server speaking UltraRAG's deploy protocol (the seed's
``retriever_deploy_search``), e.g. ``needle serve``."""

from typing import Any

from haystack import Document, component

from components.retrievers.remote.deploy_client import DeploySearchClient, checked_query, no_threshold


@component
class UltraRAGRemoteRetriever(DeploySearchClient):
    """
    Retrieves passages for one query from a remote index: ``POST {retriever_url}/search``.

    Documents carry the passage as content and ``meta`` ``rank`` (1 = best) and ``url``; the protocol has no ids or
    scores, so ``score_threshold`` (init and run) must stay None. Timeouts, connection errors and 5xx answers are
    retried with back-off; a failure raises ``RemoteSearchError`` carrying the server's status and body, never an
    empty result.

    ```python
    retriever = UltraRAGRemoteRetriever(retriever_url="127.0.0.1:64501", top_k=5)
    retriever.run(query="parse command line options")["documents"]
    ```
    """

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int | None = None, score_threshold: float | None = None) -> dict[str, Any]:
        """The best ``top_k`` (default: the component's) passages for ``query`` as Documents, best first;
        ``score_threshold`` must be None (the answers carry no scores)."""
        no_threshold(score_threshold)
        return {"documents": self.search(checked_query(query), top_k)[0]}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, query: str, top_k: int | None = None, score_threshold: float | None = None
    ) -> dict[str, Any]:
        """As ``run``, without blocking the event loop."""
        no_threshold(score_threshold)
        return {"documents": (await self.search_async(checked_query(query), top_k))[0]}
