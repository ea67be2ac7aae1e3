"""The shared input checks (``components.checks``) given integers longer than Python prints (4,300 digits), as a
Python caller, a JSON body or a parsed file hands them over: a ValueError naming the input and its range. Before,
``check_top_k`` failed with Python's own "Exceeds the limit (4300 digits)" (naming neither) and ``check_number``
with an OverflowError."""

import json
from collections.abc import Callable

import pytest
from haystack.errors import FilterError

from components.checks import OverlongInt, check_filters, check_number, check_top_k, parse_decimal


@pytest.mark.parametrize(
    "make",
    [lambda: 10**4301, lambda: -(10**4305), lambda: parse_decimal("7" * 4301)],
    ids=["python-int", "negative", "parsed"],
)
def test_top_k_past_python_s_digits_names_the_input_and_range(make: Callable[[], int]) -> None:
    with pytest.raises(ValueError, match=r"^top_k must be an integer in \[1, 10000\], got an integer of (about )?4,30"):
        check_top_k(make())


def test_a_number_past_the_float_range_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"^weight must be a finite number in \[0, 1\], got 1000"):
        check_number("weight", 10**400, 0, 1)
    assert check_number("weight", 1, 0, 1) == 1.0


def test_a_filter_value_too_long_to_print_is_described_by_its_size() -> None:
    with pytest.raises(FilterError, match=r"needs a list value, got an integer of about 5,001 digits"):
        check_filters({"field": "meta.x", "operator": "in", "value": 10**5000})


def test_parse_decimal_reads_what_int_reads_and_stands_in_past_the_limit() -> None:
    assert [parse_decimal(text) for text in ("12", " -7 ", "1_000", "+3")] == [12, -7, 1000, 3]
    long = json.loads('{"k": -' + "9" * 5000 + "}", parse_int=parse_decimal)["k"]
    assert isinstance(long, OverlongInt)
    assert long < -(10**4000)
    assert repr(long) == "an integer of 5,000 digits"
    with pytest.raises(ValueError, match="invalid literal"):
        parse_decimal("12x")
