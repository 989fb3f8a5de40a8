-- Model state per client from `diffusion/status`, and a statusline component.

local api = vim.api
local M = {}

-- client_id -> { state = 'starting'|'loading'|'ready'|'error'|'failed'|'stopped', model, message,
--   instructions, confidence }
-- ('error': the server reported a model failure; 'failed': the server process died;
-- instructions: the ready status said the backend follows a rewrite instruction;
-- confidence: the last suggestion's fillConfidence from its final draft, nil when unknown)
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
  clients[ctx.client_id] = { state = params.state, model = params.model or '', message = params.message or '',
    instructions = params.state == 'ready' and params.instructions == true,
    adapt = params.state == 'ready' and type(params.adapt) == 'table' and params.adapt or nil }
  -- Load failures already reach the user through the server's window/showMessage.
  if params.state == 'ready' and opts.notify_ready and not (previous and previous.state == 'ready') then
    vim.notify('diffusion-lsp: ' .. (params.message or 'ready'), vim.log.levels.INFO)
  end
  changed()
end

--- The server process of `client_id` ended. `failed`: it was not asked to stop; `note` is
--- added to the message (e.g. "restarting in 1 s, attempt 1 of 3").
function M.exited(client_id, code, signal, failed, note)
  local entry = clients[client_id] or {}
  if failed or entry.state ~= 'error' then
    local how = (signal and signal ~= 0) and ('killed by signal ' .. tostring(signal))
      or ('exit code ' .. tostring(code))
    clients[client_id] = {
      state = failed and 'failed' or 'stopped',
      model = entry.model or '',
      message = (failed and 'the server died (' .. how .. ')' or 'stopped') .. (note and ('; ' .. note) or ''),
    }
  end
  changed()
end

--- Adds `note` to the message of `client_id`'s entry (e.g. "not restarted: 3 attempts failed").
function M.note(client_id, note)
  local entry = clients[client_id]
  if entry then
    entry.message = entry.message:gsub(';.*$', '') .. '; ' .. note
    changed()
  end
end

--- Whether "Rewrite selection" should ask for an instruction: only when `client_id`'s ready
--- status said `instructions: true`.
function M.takes_instructions(client_id)
  local entry = clients[client_id]
  return entry ~= nil and entry.state == 'ready' and entry.instructions == true
end

--- A final draft arrived for `client_id`: remember its `fillConfidence` (nil / vim.NIL: unknown).
function M.suggestion(client_id, confidence)
  local entry = clients[client_id]
  if entry then
    entry.confidence = type(confidence) == 'number' and confidence or nil
  end
end

--- The state of the client attached to `bufnr` (or of any client), or nil.
function M.get(client_id)
  if client_id then
    return clients[client_id]
  end
  local _, entry = next(clients)
  return entry
end

local function pct1(p)
  return type(p) == 'number' and string.format('%.1f%%', p * 100) or '?'
end

--- The workspace adaptation in words (nil: nothing to say), from the ready status's `adapt`.
function M.describe_adapt(a)
  if type(a) ~= 'table' or type(a.state) ~= 'string' then
    return nil
  end
  local change = 'held-out lines ' .. pct1(a.before) .. ' -> ' .. pct1(a.after) .. ' exact'
  if a.state == 'adopted' then
    return 'adapted to this workspace: ' .. change
  elseif a.state == 'rejected' then
    return 'workspace adaptation not used: ' .. change
  elseif a.state == 'measuring' or a.state == 'training' then
    return type(a.before) == 'number' and ('adapting to this workspace (held-out lines ' .. pct1(a.before)
      .. ' exact before)') or 'adapting to this workspace'
  elseif a.state == 'failed' then
    return 'workspace adaptation failed'
  end
  return nil
end

local ICONS = { starting = '…', loading = '…', ready = '✓', error = '✗', failed = '✗', stopped = '■' }

--- One line for :DiffusionStatus: "diffusion-lsp: ready (model embedded)", with the message when
--- it says more than the state and the model ("embedded ready" does not).
function M.describe(entry)
  if not entry then
    return 'diffusion-lsp: not attached to this buffer'
  end
  local line = 'diffusion-lsp: ' .. entry.state
  if entry.model ~= nil and entry.model ~= '' then
    line = line .. ' (model ' .. entry.model .. ')'
  end
  local said = { [entry.state] = true, [entry.model or ''] = true, loading = true, starting = true,
    ready = true, model = true, ['diffusion-lsp'] = true }
  local extra = false
  for word in (entry.message or ''):gmatch('%S+') do
    if not said[word] then
      extra = true
      break
    end
  end
  if extra then
    line = line .. ': ' .. entry.message
  end
  if entry.state == 'ready' and type(entry.confidence) == 'number' then
    local rounded = math.floor(entry.confidence * 100 + 0.5)
    local shown = (rounded == 0 and entry.confidence > 0) and '<1' or tostring(rounded)
    line = line .. '; last suggestion ' .. shown .. '% likely right'
  end
  local adapted = entry.state == 'ready' and M.describe_adapt(entry.adapt) or nil
  if adapted then
    line = line .. '; ' .. adapted
  end
  return line
end

--- "diffusion ✓" style text for a statusline; empty when no server runs.
function M.statusline(client_id)
  local entry = M.get(client_id)
  if not entry then
    return ''
  end
  return 'diffusion ' .. (ICONS[entry.state] or entry.state)
end

return M
