-- acp-agent as an ACP provider for avante.nvim (https://github.com/yetone/avante.nvim).
-- Merge this into your avante setup and replace the path with the absolute path of the
-- `acp-agent` script in your clone's virtual environment (`realpath .venv/bin/acp-agent`), or
-- with "acp-agent" once it is installed as a tool.
require("avante").setup({
  provider = "acp-agent",
  acp_providers = {
    ["acp-agent"] = {
      command = "/absolute/path/to/acp-agent/.venv/bin/acp-agent",
      args = {},
      -- avante starts the agent with PATH and these variables only, not Neovim's whole
      -- environment: pass HOME (the agent's folders live under it) and the key along.
      env = {
        HOME = os.getenv("HOME"),
        ANTHROPIC_API_KEY = os.getenv("ANTHROPIC_API_KEY"),
        ACP_AGENT_MODEL = "anthropic/claude-sonnet-4-5",
      },
    },
  },
})
