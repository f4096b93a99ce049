"""Slash commands without a session: how a prompt names one, and the person's templates."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from acp_agent.capabilities.session import (
    CommandInvocation,
    available_commands,
    load_templates,
    parse_invocation,
    title_from_prompt,
)
from acp_agent.capabilities.session._commands import BUILTIN_COMMANDS
from acp_agent.content import (
    ContentPart,
    ImageContent,
    ResourceContent,
    ResourceLinkContent,
    TextContent,
)
from acp_agent.toolkit import CommandSpec

NAMES = frozenset({"model", "review"})


def text(value: str) -> TextContent:
    return TextContent(value)


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("/model openai/gpt-4.1", CommandInvocation("model", "openai/gpt-4.1", "")),
        ("  /review  src/a.py\nand b.py", CommandInvocation("review", "src/a.py\nand b.py", "")),
        ("/review\nthe parser", CommandInvocation("review", "the parser", "")),
        ("/model", CommandInvocation("model", "", "")),
    ],
)
def test_a_prompt_starting_with_a_known_name_invokes_that_command(
    typed: str, expected: CommandInvocation
):
    invocation = parse_invocation([text(typed)], NAMES)

    assert invocation is not None
    assert (invocation.name, invocation.arguments) == (expected.name, expected.arguments)
    assert invocation.text == typed


@pytest.mark.parametrize(
    "content",
    [
        [text("/usr/bin is where it lives")],
        [text("please run /model")],
        [ResourceLinkContent("file:///a", "a"), text("/model")],
        [],
    ],
)
def test_other_prompts_are_no_command(content: list[ContentPart]):
    assert parse_invocation(content, NAMES) is None


def write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    return path


def test_templates_come_from_the_workspace_and_the_user_and_the_workspace_wins_a_name(
    tmp_path: Path,
):
    workspace, config = tmp_path / "w", tmp_path / "config"
    write(workspace / ".acp-agent/commands/review.md", "Review $ARGUMENTS carefully.")
    write(config / "commands/review.md", "The user's review.")
    write(config / "commands/explain.md", "---\ndescription: Explain code\n---\nExplain it.")
    write(workspace / ".acp-agent/commands/notes.txt", "not a command")

    templates = load_templates(workspace, config)

    assert [(t.spec.name, t.origin) for t in templates] == [
        ("explain", "user"),
        ("review", "workspace"),
    ]
    explain, review = templates
    assert explain.spec == CommandSpec("explain", "Explain code")
    assert review.spec == CommandSpec("review", "Review $ARGUMENTS carefully.", "arguments")
    assert review.expand("  src/a.py ") == "Review src/a.py carefully."
    assert explain.expand("the parser") == "Explain it.\n\nthe parser"
    assert explain.expand("") == "Explain it."


def test_front_matter_beyond_description_and_hint_is_ignored_and_said_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    write(
        tmp_path / ".acp-agent/commands/yolo.md",
        "---\ndescription: Do anything\nallowed-tools: shell\nmode: bypass\n"
        "argument-hint: <task>\n---\n/mode bypass\n$ARGUMENTS",
    )

    with caplog.at_level(logging.WARNING):
        [template] = load_templates(tmp_path, None)

    assert template.spec == CommandSpec("yolo", "Do anything", "<task>")
    assert template.text == "/mode bypass\n$ARGUMENTS"
    ignored = [r.getMessage() for r in caplog.records]
    assert any("'allowed-tools' ignored" in m for m in ignored)
    assert any("'mode' ignored" in m for m in ignored)


def test_a_template_never_takes_a_built_in_name(tmp_path: Path):
    write(tmp_path / ".acp-agent/commands/mode.md", "Switch to bypass.")
    write(tmp_path / ".acp-agent/commands/bad name.md", "Spaces are not a name.")
    write(tmp_path / ".acp-agent/commands/empty.md", "---\ndescription: nothing\n---\n")

    assert load_templates(tmp_path, None) == []


def test_the_editor_lists_the_built_ins_first_then_the_templates(tmp_path: Path):
    write(tmp_path / ".acp-agent/commands/review.md", "Review.")
    mcp = CommandSpec("mcp", "MCP servers")

    listed = available_commands(load_templates(tmp_path, None), [mcp])

    assert [spec.name for spec in listed] == [
        *(spec.name for spec in BUILTIN_COMMANDS),
        "mcp",
        "review",
    ]
    assert [spec.name for spec in BUILTIN_COMMANDS] == [
        "help",
        "compact",
        "model",
        "mode",
        "permissions",
        "rules",
        "title",
    ]


@pytest.mark.parametrize(
    ("content", "title"),
    [
        ([text("Fix the   flaky test\nin tests/a.py")], "Fix the flaky test"),
        ([text("\n\n# Plan the release  ")], "Plan the release"),
        (
            [text("Refactor the session store so that listing pages never skip a session")],
            "Refactor the session store so that listing pages never…",
        ),
        ([ResourceLinkContent("file:///w/a.py", "a.py")], "a.py"),
        ([ResourceLinkContent("file:///w/a.py", "a.py", title="The A")], "The A"),
        ([ResourceContent("file:///w/notes.md", "x")], "notes.md"),
        ([ImageContent("", "image/png")], None),
    ],
)
def test_a_title_is_the_first_line_of_the_first_prompt_cut_at_a_word(
    content: list[ContentPart], title: str | None
):
    assert title_from_prompt(content) == title
