-- init.lua of tests/lsp/test_neovim.py: headless Neovim 0.7 as a real LSP client of ave-lsp.
--
--   nvim --headless --clean -n -u tests/lsp/nvim/diagnostics.lua FILE.py
--
-- Loads editors/neovim/ave.lua (the configuration users copy, unchanged) with the server
-- command pointed at the test's Python, opens FILE.py (the command line's file), waits until
-- the buffer has diagnostics (or the deadline passes), writes them as JSON and quits.
-- Environment:
--   AVE_NVIM_SNIPPET     path of editors/neovim/ave.lua
--   AVE_NVIM_PYTHON      the Python that runs `-m ave_lsp`
--   AVE_NVIM_OUT         where to write the JSON result
--   AVE_NVIM_TIMEOUT_MS  the deadline (default 60000)

local out = assert(os.getenv("AVE_NVIM_OUT"), "AVE_NVIM_OUT is not set")
local timeout_ms = tonumber(os.getenv("AVE_NVIM_TIMEOUT_MS") or "60000")

local function finish(result, status)
  local f = assert(io.open(out, "w"))
  f:write(vim.fn.json_encode(result))
  f:close()
  if status == 0 then
    vim.cmd("qall!")
  else
    vim.cmd("cquit! " .. status)
  end
end

local function clients_of(bufnr)
  local names, pids = {}, {}
  for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
    table.insert(names, c.name)
    if c.rpc and c.rpc.pid then
      table.insert(pids, c.rpc.pid)
    end
  end
  table.sort(names)
  return names, pids
end

local function run()
  local start = vim.loop.hrtime()
  local bufnr = vim.api.nvim_get_current_buf()
  -- (stop early when no client exists any more, initialized or not: the server failed to
  -- start or died; get_client_by_id also sees clients still initializing)
  local function any_client()
    for id = 1, 16 do
      if vim.lsp.get_client_by_id(id) ~= nil then
        return true
      end
    end
    return false
  end
  local done = vim.wait(timeout_ms, function()
    return #vim.diagnostic.get(bufnr) > 0 or not any_client()
  end, 50)
  done = done and #vim.diagnostic.get(bufnr) > 0
  local items = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(items, {
      lnum = d.lnum,
      col = d.col,
      end_lnum = d.end_lnum,
      end_col = d.end_col,
      severity = d.severity,
      code = d.code,
      message = d.message,
      source = d.source,
    })
  end
  local names, pids = clients_of(bufnr)
  finish({
    nvim_version = tostring(vim.version().major) .. "." .. vim.version().minor .. "."
      .. vim.version().patch,
    file = vim.api.nvim_buf_get_name(bufnr),
    filetype = vim.bo[bufnr].filetype,
    clients = names,
    server_pids = pids,
    timed_out = not done,
    elapsed_ms = math.floor((vim.loop.hrtime() - start) / 1e6),
    diagnostics = items,
  }, 0)
end

-- after start-up: the file named on the command line is loaded and its FileType has fired
local load_error
vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  callback = function()
    if load_error then
      pcall(finish, { error = "loading the configuration failed: " .. load_error }, 3)
      return
    end
    local ok, err = pcall(run)
    if not ok then
      pcall(finish, { error = tostring(err) }, 3)
    end
  end,
})

local ok, err = pcall(function()
  vim.lsp.set_log_level(os.getenv("AVE_NVIM_LSP_LOG_LEVEL") or "WARN")
  vim.g.ave_lsp_cmd = { assert(os.getenv("AVE_NVIM_PYTHON"), "AVE_NVIM_PYTHON is not set"),
    "-m", "ave_lsp" }
  dofile(assert(os.getenv("AVE_NVIM_SNIPPET"), "AVE_NVIM_SNIPPET is not set"))
end)
if not ok then
  load_error = tostring(err)
end
