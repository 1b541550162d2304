-- Ave's language server in Neovim 0.11+ (the vim.lsp.config / vim.lsp.enable API).
--
-- UNTESTED HERE: the project's machines have Neovim 0.7, which lacks this API. A test
-- (tests/editors/test_snippets.py) loads this file in Neovim 0.7 with vim.lsp.config and
-- vim.lsp.enable stubbed, and checks what it passes to them; editors/neovim/ave.lua (the
-- 0.7 start_client form, which also works in 0.11) is the one tested end to end.
--
-- Put this file somewhere and `dofile()` it from your init.lua, or paste it there:
--
--     dofile("/path/to/ave/editors/neovim/ave-0.11.lua")
--
-- It runs beside your Python server (pyright, basedpyright, ruff: enable those as usual);
-- Neovim attaches every enabled server whose filetypes match.
--
-- Options (set them before loading this file):
--   vim.g.ave_lsp_cmd       the server command, a list (default {"ave-lsp"}; e.g.
--                           {"/path/to/venv/bin/python", "-m", "ave_lsp"})
--   vim.g.ave_lsp_settings  the "ave" settings section (see docs/lsp.md), default
--                           none: [tool.ave] of pyproject.toml, else the defaults,
--                           apply (a value set here overrides the project's)

vim.lsp.config("ave", {
  cmd = vim.g.ave_lsp_cmd or { "ave-lsp" },
  filetypes = { "python" },
  -- the project root: the nearest directory above the file with one of these
  root_markers = { "pyproject.toml", ".git" },
  -- answers the server's workspace/configuration request for the "ave" section
  settings = { ave = vim.g.ave_lsp_settings or vim.empty_dict() },
})
vim.lsp.enable("ave")
