-- Runs the Neovim LSP snippet $SNIPPET with a stand-in `vim.lsp`, and prints what it
-- configured: the name it enabled, then the command, one word a line.
local configured, enabled = {}, {}
vim = {
  lsp = {
    config = function(name, config) configured[name] = config end,
    enable = function(name) enabled[#enabled + 1] = name end,
  },
}
dofile(os.getenv("SNIPPET"))
assert(#enabled == 1, "the snippet must enable one server")
local config = assert(configured[enabled[1]], "it enabled a server it did not configure")
io.write(enabled[1], "\n", table.concat(config.cmd, "\n"), "\n")
