-- Model state per client from `diffusion/status`, and a statusline component.

local api = vim.api
local M = {}

-- client_id -> { state = 'starting'|'loading'|'ready'|'error'|'stopped', model, message }
local clients = {}
local opts = { notify_ready = false }

function M.configure(options)
  opts = vim.tbl_extend('force', opts, options or {})
end

local function changed()
  api.nvim_exec_autocmds('User', { pattern = 'DiffusionLspStatus', modeline = false })
end

function M.starting(client_id)
  clients[client_id] = { state = 'starting', model = '', message = 'starting diffusion-lsp' }
  changed()
end

--- Handler for the `diffusion/status` notification.
function M.handler(_, params, ctx)
  if type(params) ~= 'table' or type(params.state) ~= 'string' then
    return
  end
  local previous = clients[ctx.client_id]
  clients[ctx.client_id] = { state = params.state, model = params.model or '', message = params.message or '' }
  -- Load failures already reach the user through the server's window/showMessage.
  if params.state == 'ready' and opts.notify_ready and not (previous and previous.state == 'ready') then
    vim.notify('diffusion-lsp: ' .. (params.message or 'ready'), vim.log.levels.INFO)
  end
  changed()
end

function M.exited(client_id, code, signal)
  local entry = clients[client_id] or {}
  if entry.state ~= 'error' then
    clients[client_id] = {
      state = 'stopped',
      model = entry.model or '',
      message = ('exited (code %s, signal %s)'):format(tostring(code), tostring(signal)),
    }
  end
  changed()
end

--- The state of the client attached to `bufnr` (or of any client), or nil.
function M.get(client_id)
  if client_id then
    return clients[client_id]
  end
  local _, entry = next(clients)
  return entry
end

local ICONS = { starting = '…', loading = '…', ready = '✓', error = '✗', stopped = '■' }

--- "diffusion ✓" style text for a statusline; empty when no server runs.
function M.statusline(client_id)
  local entry = M.get(client_id)
  if not entry then
    return ''
  end
  return 'diffusion ' .. (ICONS[entry.state] or entry.state)
end

return M
