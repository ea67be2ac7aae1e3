"""``NeedleError``, the CLI's user-facing error, in a module of its own so that light code can raise it.

``needle_retrieval.index.generations`` (and through it every module that names ``NeedleError``) imports it from here;
the argument checks of ``needle_retrieval.cli.options`` raise it without importing Haystack.
"""


def one_line(error: BaseException) -> str:
    """An error's message on one line, its type when the message is empty: how every refusal reaches a user (the
    CLI, a route's detail, a tool error)."""
    return " ".join(str(error).split()) or type(error).__name__


class NeedleError(Exception):
    """A user-facing error: the CLI prints its message on one line, without a traceback."""


class EmbeddingsNotReusable(NeedleError):
    """The embedding file carried over from another generation or index was built for another model or corpus."""
