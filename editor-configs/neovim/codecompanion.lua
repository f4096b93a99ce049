-- acp-agent as an ACP adapter for CodeCompanion.nvim (https://github.com/olimorris/codecompanion.nvim).
-- Merge this into your CodeCompanion setup and replace the path with the absolute path of the
-- `acp-agent` script in your clone's virtual environment (`realpath .venv/bin/acp-agent`), or
-- with "acp-agent" once it is installed as a tool. CodeCompanion starts the agent with
-- Neovim's environment plus `env` below, so the ANTHROPIC_API_KEY (or OPENAI_API_KEY) of the
-- shell Neovim started from reaches it.
require("codecompanion").setup({
  adapters = {
    acp = {
      acp_agent = function()
        -- The built-in goose adapter carries no authentication or model settings of its
        -- own; only the name, the command and the settings below change.
        return require("codecompanion.adapters").extend("goose", {
          name = "acp_agent",
          formatted_name = "acp-agent",
          commands = {
            default = { "/absolute/path/to/acp-agent/.venv/bin/acp-agent" },
          },
          env = {
            ACP_AGENT_MODEL = "anthropic/claude-sonnet-4-5",
          },
          defaults = {
            -- Without this CodeCompanion authenticates with the first method the agent
            -- lists (an OpenAI key); "model" succeeds whenever a model is configured.
            auth_method = "model",
          },
        })
      end,
    },
  },
})
