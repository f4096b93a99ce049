# acp-agent driven by acpx (https://github.com/openclaw/acpx), a headless ACP client.
# Replace the path with the absolute path of the `acp-agent` script in your clone's virtual
# environment (`realpath .venv/bin/acp-agent`), or with acp-agent once it is installed as a
# tool. The agent inherits this shell's environment: export ANTHROPIC_API_KEY (or
# OPENAI_API_KEY) first.
ACP_AGENT_MODEL=anthropic/claude-sonnet-4-5 acpx --agent "/absolute/path/to/acp-agent/.venv/bin/acp-agent" exec "Summarise this repository."
