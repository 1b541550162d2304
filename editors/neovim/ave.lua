-- Ave's language server in Neovim 0.7 - 0.10 (the built-in client's start_client API).
--
-- Put this file somewhere and `dofile()` it from your init.lua, or paste it there:
--
--     dofile("/path/to/ave/editors/neovim/ave.lua")
--
-- It starts one `ave-lsp` per project root (the nearest directory above the file holding
-- pyproject.toml or .git, else the file's own directory) and attaches every Python buffer
-- to it. Diagnostics arrive by push (textDocument/publishDiagnostics): `:lua
-- vim.diagnostic.setqflist()` lists them, `K` with `vim.lsp.buf.hover` shows a variable's
-- dtype, shape and layout, `vim.lsp.buf.code_action()` offers "Suppress AVEnnn".
--
-- Options (set them before loading this file):
--   vim.g.ave_lsp_cmd       the server command, a list (default {"ave-lsp"}; e.g.
--                           {"/path/to/venv/bin/python", "-m", "ave_lsp"})
--   vim.g.ave_lsp_settings  the "ave" settings section (see docs/lsp.md), default
--                           none: [tool.ave] of pyproject.toml, else the defaults,
--                           apply (a value set here overrides the project's)
--
-- Neovim 0.11+ can use the shorter vim.lsp.config/vim.lsp.enable form in
-- editors/neovim/ave-0.11.lua (this file also runs there, start_client being deprecated
-- in 0.11). It is loaded, unchanged, by tests/lsp/test_neovim.py.

local clients = {}  -- project root -> client id

local function project_root(fname)
  local dir = vim.fn.fnamemodify(fname, ":p:h")
  local best
  -- findfile/finddir with ";" search upwards; .git is a directory (or, in a worktree, a file)
  for _, hit in ipairs({
    vim.fn.findfile("pyproject.toml", dir .. ";"),
    vim.fn.finddir(".git", dir .. ";"),
    vim.fn.findfile(".git", dir .. ";"),
  }) do
    if hit ~= "" then
      local root = vim.fn.fnamemodify(vim.fn.fnamemodify(hit, ":p"):gsub("/$", ""), ":h")
      if best == nil or #root > #best then
        best = root -- the nearest marker wins
      end
    end
  end
  return best or dir
end

local function attach(bufnr)
  local fname = vim.api.nvim_buf_get_name(bufnr)
  if fname == "" or vim.bo[bufnr].buftype ~= "" then
    return
  end
  local root = project_root(fname)
  local id = clients[root]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client({
      name = "ave",
      cmd = vim.g.ave_lsp_cmd or { "ave-lsp" },
      root_dir = root,
      settings = { ave = vim.g.ave_lsp_settings or vim.empty_dict() },
    })
    clients[root] = id
  end
  if id ~= nil then
    vim.lsp.buf_attach_client(bufnr, id)
  end
end

local group = vim.api.nvim_create_augroup("ave_lsp", { clear = true })
vim.api.nvim_create_autocmd("FileType", {
  group = group,
  pattern = "python",
  callback = function(args)
    attach(args.buf)
  end,
})

-- Python buffers already open when this file is loaded
for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
  if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype == "python" then
    attach(bufnr)
  end
end
