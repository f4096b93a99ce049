"""Which problems a change introduced: lines followed through the change, duplicates counted."""

from __future__ import annotations

from acp_agent.lsp import Problem, describe, line_map, new_problems


def problem(line: int, message: str = "Undefined name `x`", code: str = "F821") -> Problem:
    return Problem("ruff", "/w/a.py", line, 5, "error", message, code)


def test_lines_are_followed_through_inserted_and_deleted_lines() -> None:
    before = "a\nb\nc\nd\n"
    after = "new\na\nc\nd\nmore\n"

    assert line_map(before, after) == {1: 2, 3: 3, 4: 4}


def test_a_problem_that_moved_with_its_line_is_not_new() -> None:
    before_text = "import os\nprint(x)\n"
    after_text = "import os\n\n\nprint(x)\nprint(y)\n"
    before = [problem(2)]
    after = [problem(4), problem(5, "Undefined name `y`")]

    assert new_problems(before, after, before_text, after_text) == [
        problem(5, "Undefined name `y`")
    ]


def test_the_same_problem_on_a_changed_line_is_new() -> None:
    # The line was rewritten: what is wrong on it now is the change's doing.
    assert new_problems([problem(1)], [problem(1)], "print(x)\n", "print(x, 1)\n") == [problem(1)]


def test_one_more_of_an_old_problem_is_new() -> None:
    before_text = "f(x)\n"
    after_text = "f(x)\nf(x)\n"

    assert new_problems([problem(1)], [problem(1), problem(2)], before_text, after_text) == [
        problem(2)
    ]


def test_problems_read_as_path_line_column_severity_server_code_message() -> None:
    text = describe([problem(3)], shown="a.py")

    assert text == "a.py:3:5: error [ruff F821] Undefined name `x`"


def test_a_problem_two_servers_report_alike_is_one_line_naming_both() -> None:
    ruff = problem(3)
    twin = Problem("pylsp", "/w/a.py", 3, 5, "warning", "Undefined name `x`")
    elsewhere = Problem("pylsp", "/w/a.py", 3, 9, "error", "Undefined name `x`")
    other = Problem("pylsp", "/w/a.py", 3, 5, "error", "Name `x` is not defined")

    text = describe([ruff, twin, elsewhere, other], shown="a.py")

    assert text.splitlines() == [
        "a.py:3:5: error [ruff F821, pylsp] Undefined name `x`",
        "a.py:3:9: error [pylsp] Undefined name `x`",
        "a.py:3:5: error [pylsp] Name `x` is not defined",
    ]
