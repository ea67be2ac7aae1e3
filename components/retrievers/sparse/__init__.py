"""Retrievers over the learned sparse document store (``components.stores.sparse``)."""
