# acp-agent in Toad (https://github.com/batrachianai/toad), a terminal UI for ACP agents.
# Replace the path with the absolute path of the `acp-agent` script in your clone's virtual
# environment (`realpath .venv/bin/acp-agent`), or with acp-agent once it is installed as a
# tool. The agent inherits this shell's environment: export ANTHROPIC_API_KEY (or
# OPENAI_API_KEY) first.
ACP_AGENT_MODEL=anthropic/claude-sonnet-4-5 toad acp "/absolute/path/to/acp-agent/.venv/bin/acp-agent"
