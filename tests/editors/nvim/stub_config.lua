-- init.lua of tests/editors/test_snippets.py: loads editors/neovim/ave-0.11.lua in a
-- Neovim without vim.lsp.config (0.7), with vim.lsp.config and vim.lsp.enable replaced by
-- recorders, and writes what the snippet passed to them as JSON.
--   AVE_NVIM_SNIPPET  the snippet;  AVE_NVIM_OUT  the JSON result
--   AVE_NVIM_CMD      optional: a JSON list set as vim.g.ave_lsp_cmd first
local out = assert(os.getenv("AVE_NVIM_OUT"), "AVE_NVIM_OUT is not set")
local result = { config = {}, enable = {} }
local ok, err = pcall(function()
  local cmd = os.getenv("AVE_NVIM_CMD")
  if cmd and cmd ~= "" then
    vim.g.ave_lsp_cmd = vim.fn.json_decode(cmd)
  end
  result.had_config = vim.lsp.config ~= nil
  vim.lsp.config = function(name, cfg)
    table.insert(result.config, { name = name, cfg = cfg })
  end
  vim.lsp.enable = function(name, enable)
    table.insert(result.enable, { name = name, enable = enable == nil and true or enable })
  end
  dofile(assert(os.getenv("AVE_NVIM_SNIPPET"), "AVE_NVIM_SNIPPET is not set"))
end)
if not ok then
  result = { error = tostring(err) }
end
local f = assert(io.open(out, "w"))
f:write(vim.fn.json_encode(result))
f:close()
vim.cmd(ok and "qall!" or "cquit! 3")
