-- The few LSP client calls whose spelling changed across Neovim versions (0.7 to 0.12),
-- behind feature checks.

local M = {}

-- 0.11 made client functions methods (client:request); the 0.7 spelling is client.request.
local methods = vim.fn.has('nvim-0.11') == 1

function M.request(client, method, params, handler, bufnr)
  if methods then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.notify(client, method, params)
  if methods then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

function M.cancel_request(client, id)
  if methods then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

function M.is_stopped(client)
  if methods then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- The clients attached to `bufnr`.
function M.clients(bufnr)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ bufnr = bufnr })
  end
  return vim.tbl_values(vim.lsp.buf_get_clients(bufnr))
end

--- Starts (or reuses, per root) a client for `config` and attaches `bufnr`; returns its id
--- and whether it is new. 0.8+ has vim.lsp.start; 0.7 uses start_client + buf_attach_client
--- with the plugin's own root -> client table.
local by_root = {}
function M.start(config, bufnr)
  if vim.lsp.start then
    local named = vim.lsp.get_clients and vim.lsp.get_clients({ name = config.name })
      or vim.lsp.get_active_clients({ name = config.name })
    local known = {}
    for _, client in ipairs(named) do
      known[client.id] = true
    end
    local id = vim.lsp.start(config, { bufnr = bufnr })
    return id, id ~= nil and not known[id]
  end
  local id = by_root[config.root_dir]
  local fresh = false
  if not id or not vim.lsp.get_client_by_id(id) then
    id = vim.lsp.start_client(config)
    by_root[config.root_dir] = id
    fresh = true
  end
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  return id, fresh
end

function M.forget(client_id)
  for root, id in pairs(by_root) do
    if id == client_id then
      by_root[root] = nil
    end
  end
end

return M
