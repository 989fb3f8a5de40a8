-- diffusion-lsp for Neovim: starts the server for the configured filetypes, shows its inline
-- completions as ghost text (Neovim's own where it has one), paints drafts while a
-- suggestion develops, and exposes the code actions as commands.
--
--   require('diffusion_lsp').setup({ settings = { model = 'embedded' } })
--
-- See :help diffusion_lsp.

local api = vim.api
local actions = require('diffusion_lsp.actions')
local compat = require('diffusion_lsp.compat')
local config = require('diffusion_lsp.config')
local draft = require('diffusion_lsp.draft')
local ghost = require('diffusion_lsp.ghost')
local highlight = require('diffusion_lsp.highlight')
local status = require('diffusion_lsp.status')
local sync = require('diffusion_lsp.sync')

local M = {}

M.options = nil
local missing_reported = false
-- bufnr -> the id of the last diffusion-lsp client attached to it (kept after it exits, so the
-- statusline and :DiffusionStatus can say that it failed)
M.attached = {}
-- client ids this plugin asked to stop (their exit is not a failure)
local stopping = {}
-- automatic restarts in a row, the pending restart timer, and the client whose failure ended the
-- series (`gave_up`: no server is started again, for any buffer, until :DiffusionRestart or setup())
local restarts = { count = 0, timer = nil, gave_up = nil }

--- True when this Neovim has vim.lsp.inline_completion and the options allow it
--- ('plugin' forces the plugin's own ghost text; 'native' without the API falls back to it).
function M.uses_native()
  local mode = M.options and M.options.ghost_text or 'auto'
  -- vim.lsp loads submodules lazily on some versions: probe without letting a miss raise.
  local _, native = pcall(function()
    return vim.lsp.inline_completion
  end)
  local available = type(native) == 'table' and type(native.enable) == 'function' and type(native.get) == 'function'
  return available and mode ~= 'plugin'
end

--- The folder `bufnr`'s server runs for: the user's `root_dir`, else `config.root_for` (the working directory,
--- or the project of a file outside it).
local function root_of(bufnr)
  if M.options.root_dir then
    return M.options.root_dir(bufnr)
  end
  return config.root_for(api.nvim_buf_get_name(bufnr), vim.fn.getcwd())
end

local function client_for(bufnr)
  for _, client in ipairs(compat.clients(bufnr)) do
    if client.name == 'diffusion-lsp' then
      return client
    end
  end
end

--- The diffusion-lsp client of `bufnr`, telling the user when there is none.
local function require_client(bufnr)
  local client = client_for(bufnr)
  if not client then
    vim.notify('diffusion-lsp is not attached to this buffer', vim.log.levels.WARN)
  end
  return client
end

local function feed(lhs)
  api.nvim_feedkeys(api.nvim_replace_termcodes(lhs, true, false, true), 'n', false)
end

--- Insert-mode keys of the plugin's ghost text, buffer-local; an accept key with nothing
--- to accept types itself.
local function map_keys(bufnr)
  local keys = M.options.keys
  local function map(lhs, fn, desc)
    if lhs then
      vim.keymap.set('i', lhs, function()
        if not fn() then
          feed(lhs)
        end
      end, { buffer = bufnr, desc = desc })
    end
  end
  if M.uses_native() then
    map(keys.accept, function()
      return vim.lsp.inline_completion.get({ bufnr = bufnr })
    end, 'diffusion-lsp: accept the suggestion')
    if keys.next then
      vim.keymap.set('i', keys.next, function()
        pcall(vim.lsp.inline_completion.select, { bufnr = bufnr, count = 1 })
      end, { buffer = bufnr, desc = 'diffusion-lsp: next alternative' })
    end
    if keys.prev then
      vim.keymap.set('i', keys.prev, function()
        pcall(vim.lsp.inline_completion.select, { bufnr = bufnr, count = -1 })
      end, { buffer = bufnr, desc = 'diffusion-lsp: previous alternative' })
    end
    return
  end
  map(keys.accept, function()
    return ghost.accept(bufnr)
  end, 'diffusion-lsp: accept the suggestion')
  map(keys.accept_line, function()
    return ghost.accept_line(bufnr)
  end, 'diffusion-lsp: accept one line of the suggestion')
  map(keys.accept_word, function()
    return ghost.accept_word(bufnr)
  end, 'diffusion-lsp: accept one word of the suggestion')
  map(keys.next, function()
    return ghost.cycle(bufnr, 1)
  end, 'diffusion-lsp: next alternative')
  map(keys.prev, function()
    return ghost.cycle(bufnr, -1)
  end, 'diffusion-lsp: previous alternative')
  map(keys.dismiss, function()
    return ghost.dismiss(bufnr)
  end, 'diffusion-lsp: dismiss the suggestion')
  if keys.trigger then
    vim.keymap.set('i', keys.trigger, function()
      ghost.request(bufnr, true)
    end, { buffer = bufnr, desc = 'diffusion-lsp: suggest now' })
  end
end

local function on_attach(client, bufnr)
  if M.uses_native() then
    pcall(vim.lsp.inline_completion.enable, true, { bufnr = bufnr, client_id = client.id })
  else
    ghost.attach(bufnr, client.id)
  end
  map_keys(bufnr)
  sync.watch(bufnr)
  local group = api.nvim_create_augroup('diffusion_lsp_draft_' .. bufnr, { clear = true })
  api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI', 'TextChangedP', 'InsertLeave', 'BufLeave' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      draft.clear(bufnr)
    end,
  })
  M.attached[bufnr] = client.id
end
M._on_attach = on_attach -- for the tests

--- Loaded buffers the plugin serves: the configured filetypes, normal buffers.
local function served_buffers()
  local out = {}
  for _, bufnr in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].buftype == ''
      and vim.tbl_contains(M.options.filetypes, vim.bo[bufnr].filetype) then
      out[#out + 1] = bufnr
    end
  end
  return out
end

--- Attaches every served buffer (a new server gets each one's current text in didOpen).
local function attach_all()
  for _, bufnr in ipairs(served_buffers()) do
    M.attach(bufnr)
  end
end

local function cancel_restart()
  if restarts.timer then
    restarts.timer:stop()
    restarts.timer:close()
    restarts.timer = nil
  end
end

--- The server of `client_id` ended without being asked to: show it failed, restart it (bounded).
local function on_failure(client_id, code, signal, lived_ms)
  local opts = M.options.restart or {}
  local retries = opts.retries or 0
  if lived_ms > 60000 then
    restarts.count = 0 -- it had been running fine: a fresh series of attempts
  end
  if restarts.count >= retries then
    status.exited(client_id, code, signal, true,
      retries > 0 and ('not restarted after %d attempts: :DiffusionRestart, :DiffusionLog'):format(retries)
        or 'not restarted (restart.retries = 0): :DiffusionRestart')
    -- Said once: a buffer opened from now on starts no server (M.attach), so no further failure to tell.
    restarts.gave_up = client_id
    vim.notify('diffusion-lsp: ' .. status.get(client_id).message, vim.log.levels.ERROR)
    return
  end
  restarts.count = restarts.count + 1
  local delay = (opts.delay_ms or 1000) * 2 ^ (restarts.count - 1)
  status.exited(client_id, code, signal, true,
    ('restarting in %.1f s (attempt %d of %d)'):format(delay / 1000, restarts.count, retries))
  if restarts.count == 1 then
    -- The first failure of a series is told; the next attempts show in the statusline and
    -- :DiffusionStatus only (Neovim adds its own "Client N quit" line for each), and giving up is told.
    vim.notify('diffusion-lsp: ' .. status.get(client_id).message, vim.log.levels.WARN)
  end
  cancel_restart()
  restarts.timer = vim.loop.new_timer()
  restarts.timer:start(delay, 0, vim.schedule_wrap(function()
    cancel_restart()
    attach_all()
  end))
end

--- The client capabilities: Neovim's, with versioned workspace edits (documentChanges) announced.
--- Neovim before 0.8 does not announce them although it applies them: the server then sends a
--- rewrite or fill as an unversioned edit, which Neovim applied to whatever the buffer had become
--- meanwhile (a line typed above the selection while the model worked shifted the rewrite onto the
--- wrong lines). A versioned edit for an older version is refused instead ("newer than edits").
function M.capabilities()
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.workspace = capabilities.workspace or {}
  capabilities.workspace.workspaceEdit = capabilities.workspace.workspaceEdit or {}
  capabilities.workspace.workspaceEdit.documentChanges = true
  return capabilities
end

--- The client configuration for `root`, or nil when the server cannot be found.
local function client_config(root)
  local cmd, looked = config.resolve_cmd(M.options.cmd, root)
  if not cmd then
    if not missing_reported then
      missing_reported = true
      vim.notify(
        ('diffusion-lsp: the server "%s" was not found (looked at %s). Run scripts/setup.sh in the diffusion-lsp '
          .. 'checkout (it makes .venv/bin/diffusion-lsp, which the plugin finds), install it into a Python '
          .. 'environment on $PATH, or pass cmd = { "/path/to/diffusion-lsp" } to setup().')
          :format(M.options.cmd[1], table.concat(looked, ', ')),
        vim.log.levels.ERROR
      )
    end
    return nil
  end
  local settings = config.server_settings(M.options)
  local started = vim.loop.now()
  return {
    name = 'diffusion-lsp',
    cmd = cmd,
    root_dir = root,
    capabilities = M.capabilities(),
    init_options = settings,
    settings = { diffusionLsp = settings },
    handlers = {
      ['diffusion/draft'] = draft.handler,
      ['diffusion/status'] = status.handler,
    },
    on_attach = on_attach,
    on_exit = function(code, signal, id)
      vim.schedule(function()
        compat.forget(id)
        for bufnr, client_id in pairs(M.attached) do
          if client_id == id then
            ghost.dismiss(bufnr)
            draft.forget(bufnr)
          end
        end
        -- Asked to stop, or ended as Neovim's client counts a clean end (code 0, SIGTERM).
        local clean = code == 0 and (signal == 0 or signal == 15 or signal == nil)
        if stopping[id] or clean or vim.v.exiting ~= vim.NIL then
          stopping[id] = nil
          status.exited(id, code, signal, false)
        else
          on_failure(id, code, signal, vim.loop.now() - started)
        end
      end)
    end,
  }
end

--- A diffusion-lsp client running for `root`, or nil.
local function running_for(root)
  local all = vim.lsp.get_clients and vim.lsp.get_clients({ name = 'diffusion-lsp' }) or vim.lsp.get_active_clients()
  for _, client in ipairs(all) do
    if client.name == 'diffusion-lsp' and client.config.root_dir == root and not compat.is_stopped(client) then
      return client
    end
  end
  return nil
end

--- Starts (or reuses) the server for `bufnr`'s root and attaches the buffer.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if vim.bo[bufnr].buftype ~= '' then
    return
  end
  local root = root_of(bufnr)
  if restarts.gave_up and not running_for(root) then
    -- The server kept dying and was not restarted: a buffer opened since starts no new one (it would die
    -- as well, each time with its messages); :DiffusionRestart attaches every served buffer again.
    M.attached[bufnr] = restarts.gave_up
    return
  end
  local cfg = client_config(root)
  if not cfg then
    return
  end
  local client_id, fresh = compat.start(cfg, bufnr)
  if client_id and fresh then
    status.starting(client_id)
  end
  if client_id then
    M.attached[bufnr] = client_id
  end
  return client_id
end

local function running_clients()
  local all = vim.lsp.get_clients and vim.lsp.get_clients({ name = 'diffusion-lsp' }) or vim.lsp.get_active_clients()
  local out = {}
  for _, client in ipairs(all) do
    if client.name == 'diffusion-lsp' then
      out[#out + 1] = client
    end
  end
  return out
end

--- Stops every diffusion-lsp client this plugin started; `done()` runs once they are gone.
function M.stop(done)
  cancel_restart()
  for bufnr in pairs(M.attached) do
    ghost.detach(bufnr)
    draft.forget(bufnr)
  end
  local ids = {}
  for _, client in ipairs(running_clients()) do
    stopping[client.id] = true
    ids[#ids + 1] = client.id
    vim.lsp.stop_client(client.id)
    compat.forget(client.id)
  end
  if not done then
    return
  end
  -- Wait for them to exit (a new client must not be matched to one still shutting down).
  local waited = 0
  local function check()
    local alive = {}
    for _, id in ipairs(ids) do
      if vim.lsp.get_client_by_id(id) then
        alive[#alive + 1] = id
      end
    end
    if #alive == 0 then
      return done()
    end
    waited = waited + 50
    if waited == 3000 then
      for _, id in ipairs(alive) do
        vim.lsp.stop_client(id, true)
      end
    end
    vim.defer_fn(check, 50)
  end
  check()
end

--- Stops the servers and starts them again for every served buffer, each with its current text.
function M.restart()
  restarts.count, restarts.gave_up = 0, nil
  M.stop(function()
    attach_all()
  end)
end

-- Public actions (also for the user's own mappings, e.g. a Tab that tries accept() first).
function M.accept()
  return ghost.accept(api.nvim_get_current_buf())
end

function M.accept_line()
  return ghost.accept_line(api.nvim_get_current_buf())
end

function M.accept_word()
  return ghost.accept_word(api.nvim_get_current_buf())
end

function M.next()
  return ghost.cycle(api.nvim_get_current_buf(), 1)
end

function M.prev()
  return ghost.cycle(api.nvim_get_current_buf(), -1)
end

function M.dismiss()
  return ghost.dismiss(api.nvim_get_current_buf())
end

function M.suggest()
  return ghost.request(api.nvim_get_current_buf(), true)
end

--- The status entry of `bufnr`'s server: its attached client, else the last one it had.
local function status_of(bufnr)
  local client = client_for(bufnr)
  local id = client and client.id or M.attached[bufnr]
  return id and status.get(id)
end

--- Statusline text: "diffusion ✓" (ready), "diffusion …" (loading), "diffusion ✗" (model
--- error, or the server died), "diffusion ■" (stopped); empty for other buffers.
function M.statusline()
  local client = client_for(api.nvim_get_current_buf())
  local id = client and client.id or M.attached[api.nvim_get_current_buf()]
  return id and status.statusline(id) or ''
end

--- The line :DiffusionStatus prints.
function M.status_line()
  return status.describe(status_of(api.nvim_get_current_buf()))
end

local function action_command(name)
  return function(args)
    local bufnr = api.nvim_get_current_buf()
    local client = require_client(bufnr)
    if client then
      actions.run(client, bufnr, name, actions.command_range(bufnr, args.line1, args.line2))
    end
  end
end

local function rewrite_command(args)
  local bufnr = api.nvim_get_current_buf()
  local client = require_client(bufnr)
  if not client then
    return
  end
  local range = actions.command_range(bufnr, args.line1, args.line2)
  if args.args ~= '' then
    actions.rewrite(client, bufnr, range, args.args)
    return
  end
  if not status.takes_instructions(client.id) then
    -- The backend follows no instruction (its ready status said so): rewrite without asking.
    actions.rewrite(client, bufnr, range, nil)
    return
  end
  vim.ui.input({ prompt = 'Rewrite (empty: let the model choose): ' }, function(instruction)
    if instruction ~= nil then
      actions.rewrite(client, bufnr, range, instruction)
    end
  end)
end

local function define_commands()
  local command = api.nvim_create_user_command
  command('DiffusionSuggest', M.suggest, { desc = 'diffusion-lsp: suggest at the cursor' })
  command('DiffusionAccept', M.accept, {})
  command('DiffusionAcceptLine', M.accept_line, {})
  command('DiffusionAcceptWord', M.accept_word, {})
  command('DiffusionNext', M.next, {})
  command('DiffusionPrev', M.prev, {})
  command('DiffusionDismiss', M.dismiss, {})
  command('DiffusionRewrite', rewrite_command, { range = true, nargs = '?', desc = 'diffusion-lsp: rewrite with an instruction' })
  command('DiffusionFillHoles', action_command('fill_holes'), { range = '%' })
  command('DiffusionCompleteBody', action_command('complete_body'), { range = true })
  command('DiffusionFixSyntax', action_command('fix_syntax'), { range = true })
  command('DiffusionStatus', function()
    print(M.status_line())
  end, {})
  command('DiffusionLog', function()
    vim.cmd('tabnew ' .. vim.fn.fnameescape(vim.lsp.get_log_path()))
  end, {})
  command('DiffusionRestart', function()
    M.restart()
  end, {})
end

--- Configures the plugin and starts the server for matching buffers (see :help diffusion_lsp).
function M.setup(user)
  M.options = config.merge(user)
  cancel_restart()
  restarts.count, restarts.gave_up = 0, nil
  local opts = M.options
  ghost.configure({ auto_trigger = opts.auto_trigger, debounce_ms = opts.debounce_ms, before_request = sync.flush })
  status.configure({ notify_ready = opts.notify_ready })
  draft.buffers = function()
    return vim.tbl_keys(M.attached)
  end
  draft.busy = function(bufnr)
    return ghost.visible(bufnr)
  end
  ghost.on_change(function(bufnr)
    draft.clear(bufnr)
  end)
  highlight.define()
  define_commands()

  local group = api.nvim_create_augroup('diffusion_lsp', { clear = true })
  api.nvim_create_autocmd('ColorScheme', { group = group, callback = highlight.define })
  api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = opts.filetypes,
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  -- Buffers already open when setup() runs.
  for _, bufnr in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(opts.filetypes, vim.bo[bufnr].filetype) then
      M.attach(bufnr)
    end
  end
end

return M
