"""Batch web search through Exa: ``queries`` -> one list of Documents per query, ``retrieve_thread_num`` at a time.

The options, requests and errors are those of ``ExaWebSearch`` (see ``exa_web_search``); this component only
takes a list of queries, as UltraRAG's ``retriever_batch_websearch`` does, and keeps their order.
"""

from haystack import component

from components.websearch.exa_web_search import ExaSearchBase
from components.websearch.websearch_common import BatchQueryRuns


@component
class ExaBatchWebSearch(ExaSearchBase, BatchQueryRuns):
    """Searches the web through Exa for a batch of queries, at most ``retrieve_thread_num`` in flight.

    ```python
    search = ExaBatchWebSearch(top_k=3, retrieve_thread_num=4)  # key from EXA_API_KEY
    per_query = search.run(queries=["what is BM25", "what is FAISS"])["documents"]
    assert len(per_query) == 2
    ```
    """
