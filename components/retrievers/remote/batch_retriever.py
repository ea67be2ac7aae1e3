"""``UltraRAGRemoteBatchRetriever``: many queries in one request to a server speaking UltraRAG's deploy protocol."""

from typing import Any

from haystack import Document, component

from components.retrievers.remote.deploy_client import DeploySearchClient, checked_queries, no_threshold


@component
class UltraRAGRemoteBatchRetriever(DeploySearchClient):
    """
    Retrieves passages for a list of queries in one ``POST {retriever_url}/search``: one list of Documents per
    query, in query order (as ``UltraRAGRemoteRetriever`` gives for each query alone).

    ```python
    retriever = UltraRAGRemoteBatchRetriever(retriever_url="127.0.0.1:64501", top_k=5)
    retriever.run(queries=["zip files", "threads"])["documents"]  # list[list[Document]]
    ```
    """

    @component.output_types(documents=list[list[Document]])
    def run(self, queries: list[str], top_k: int | None = None, score_threshold: float | None = None) -> dict[str, Any]:
        """The best ``top_k`` passages for each query, in query order; ``score_threshold`` must be None (the
        answers carry no scores)."""
        no_threshold(score_threshold)
        return {"documents": self.search(checked_queries(queries), top_k)}

    @component.output_types(documents=list[list[Document]])
    async def run_async(
        self, queries: list[str], top_k: int | None = None, score_threshold: float | None = None
    ) -> dict[str, Any]:
        """As ``run``, without blocking the event loop."""
        no_threshold(score_threshold)
        return {"documents": await self.search_async(checked_queries(queries), top_k)}
