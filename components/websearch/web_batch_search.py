"""``WebBatchSearch``: a batch of queries through the provider named by ``backend``, as UltraRAG's
``retriever_batch_websearch`` takes them: one list of Documents per query, ``retrieve_thread_num`` at a time.

It builds the provider's batch component (``ExaBatchWebSearch``, ``TavilyBatchWebSearch``,
``ZhipuAIBatchWebSearch``) and hands every run to it; options as ``WebSearch``.
"""

from haystack import Document, component

from components.websearch.web_search import WebSearchRouter
from components.websearch.websearch_common import BatchQueryRuns


@component
class WebBatchSearch(WebSearchRouter):
    """Searches the web for a batch of queries through the provider named by ``backend``, order kept.

    ```python
    search = WebBatchSearch(backend="tavily", top_k=3, retrieve_thread_num=8)
    per_query = search.run(queries=["what is BM25", "what is FAISS"])["documents"]
    ```
    """

    _batch = True

    @component.output_types(documents=list[list[Document]])
    def run(self, queries: list[str], top_k: int | None = None) -> dict[str, list[list[Document]]]:
        """Search every query (see ``BatchQueryRuns.run``: same input checks, output and errors)."""
        assert isinstance(self.delegate, BatchQueryRuns)
        return self.delegate.run(queries=queries, top_k=top_k)

    @component.output_types(documents=list[list[Document]])
    async def run_async(self, queries: list[str], top_k: int | None = None) -> dict[str, list[list[Document]]]:
        """Async twin of ``run``."""
        assert isinstance(self.delegate, BatchQueryRuns)
        return await self.delegate.run_async(queries=queries, top_k=top_k)
