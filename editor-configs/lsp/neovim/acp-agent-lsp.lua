-- acp-agent as a language server in Neovim 0.11 or later (no plugin): put in init.lua.
-- Code actions (gra) offer "Fix this problem" and "Explain this"; ask anything with
-- :lua vim.lsp.get_clients({ name = "acp_agent" })[1]:exec_cmd({ title = "ask",
--   command = "acp-agent.ask", arguments = { "Your prompt" } })
vim.lsp.config("acp_agent", {
  cmd = { "/absolute/path/to/acp-agent/.venv/bin/acp-agent", "lsp" },
  filetypes = { "python", "lua", "javascript", "typescript", "rust", "go" },
  root_markers = { ".git" },
})
vim.lsp.enable("acp_agent")
