"""Pipeline files and how needle runs them: templates filled in (``files``), the direct runner (``direct_run``),
the embedder of each role (``embedders``), the fusion setting (``fusion``) and the one feed rule (``feed``)."""
