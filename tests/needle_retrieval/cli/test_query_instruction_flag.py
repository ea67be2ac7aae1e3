"""`needle search --query-instruction TEXT`: refused before anything loads when no search could use it, with one line
naming the flag. (That it reaches the query embedder, and what ``""`` means, is tested with every other entry point in
tests/needle_retrieval/serve/test_one_instruction.py.)"""

import pytest

from components.checks import MAX_QUERY_CHARS
from needle_retrieval.cli import main


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\udcff", "argument --query-instruction: the instruction"),  # a byte that is not UTF-8, as argv decodes it
        ("x" * (MAX_QUERY_CHARS + 1), f"argument --query-instruction: must be at most {MAX_QUERY_CHARS:,} characters"),
    ],
)
def test_an_instruction_no_search_could_use_is_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["search", "no-such-index", "q", "--query-instruction", text])
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


def test_help_states_the_rule(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["search", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--query-instruction TEXT put TEXT in front of every query" in text
    assert '"" for none; default: the index\'s own' in text
