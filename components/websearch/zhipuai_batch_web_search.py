"""Batch web search through ZhipuAI: ``queries`` -> one list of Documents per query, ``retrieve_thread_num`` at a time.

The options, requests and errors are those of ``ZhipuAIWebSearch`` (see ``zhipuai_web_search``); this component only
takes a list of queries, as UltraRAG's ``retriever_batch_websearch`` does, and keeps their order.
"""

from haystack import component

from components.websearch.websearch_common import BatchQueryRuns
from components.websearch.zhipuai_web_search import ZhipuAISearchBase


@component
class ZhipuAIBatchWebSearch(ZhipuAISearchBase, BatchQueryRuns):
    """Searches the web through ZhipuAI for a batch of queries, at most ``retrieve_thread_num`` in flight.

    ```python
    search = ZhipuAIBatchWebSearch(top_k=3, retrieve_thread_num=4)  # key from ZHIPUAI_API_KEY
    per_query = search.run(queries=["what is BM25", "what is FAISS"])["documents"]
    assert len(per_query) == 2
    ```
    """
