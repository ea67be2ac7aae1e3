"""Building and reading index directories: generations and their checks, the manifest, the FAISS, BM25, Milvus and
image parts, the search pipelines a generation holds, and `needle index` itself (``build``)."""
