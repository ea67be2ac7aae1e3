"""Batch web search through Tavily: ``queries`` -> one list of Documents per query, ``retrieve_thread_num`` at a time.

The options, requests and errors are those of ``TavilyWebSearch`` (see ``tavily_web_search``); this component only
takes a list of queries, as UltraRAG's ``retriever_batch_websearch`` does, and keeps their order.
"""

from haystack import component

from components.websearch.tavily_web_search import TavilySearchBase
from components.websearch.websearch_common import BatchQueryRuns


@component
class TavilyBatchWebSearch(TavilySearchBase, BatchQueryRuns):
    """Searches the web through Tavily for a batch of queries, at most ``retrieve_thread_num`` in flight.

    ```python
    search = TavilyBatchWebSearch(top_k=3, retrieve_thread_num=4)  # key from TAVILY_API_KEY
    per_query = search.run(queries=["what is BM25", "what is FAISS"])["documents"]
    assert len(per_query) == 2
    ```
    """
