-- acp-agent as an ACP adapter for CodeCompanion.nvim (https://github.com/olimorris/codecompanion.nvim).
-- Put this in your CodeCompanion setup and replace the path with the absolute path
-- of the `acp-agent` script inside your clone's virtual environment.
-- It extends the built-in `goose` adapter, which carries no authentication or
-- model settings of its own; only the name and the command change.
require("codecompanion").setup({
  adapters = {
    acp = {
      acp_agent = function()
        return require("codecompanion.adapters").extend("goose", {
          name = "acp_agent",
          formatted_name = "acp-agent",
          commands = {
            default = { "/absolute/path/to/acp-agent/.venv/bin/acp-agent" },
          },
        })
      end,
    },
  },
})
