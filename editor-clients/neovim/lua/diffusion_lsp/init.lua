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

local M = {}

M.options = nil
local missing_reported = false

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

local function root_of(bufnr)
  if M.options.root_dir then
    return M.options.root_dir(bufnr)
  end
  return vim.fn.getcwd()
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
    return
  end
  map(keys.accept, function()
    return ghost.accept(bufnr)
  end, 'diffusion-lsp: accept the suggestion')
  map(keys.accept_line, function()
    return ghost.accept_line(bufnr)
  end, 'diffusion-lsp: accept one line of the suggestion')
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
  local group = api.nvim_create_augroup('diffusion_lsp_draft_' .. bufnr, { clear = true })
  api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI', 'InsertLeave', 'BufLeave' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      draft.clear(bufnr)
    end,
  })
  M.attached[bufnr] = client.id
end
M._on_attach = on_attach -- for the tests

--- The client configuration for `root`, or nil when the server cannot be found.
local function client_config(root)
  local cmd, looked = config.resolve_cmd(M.options.cmd, root)
  if not cmd then
    if not missing_reported then
      missing_reported = true
      vim.notify(
        ('diffusion-lsp: the server "%s" was not found (looked at %s). Install it into a Python environment '
          .. '(in a checkout of diffusion-lsp: pip install .), or pass cmd = { "/path/to/diffusion-lsp" } to setup().')
          :format(M.options.cmd[1], table.concat(looked, ', ')),
        vim.log.levels.ERROR
      )
    end
    return nil
  end
  local settings = config.server_settings(M.options)
  return {
    name = 'diffusion-lsp',
    cmd = cmd,
    root_dir = root,
    init_options = settings,
    settings = { diffusionLsp = settings },
    handlers = {
      ['diffusion/draft'] = draft.handler,
      ['diffusion/status'] = status.handler,
    },
    on_attach = on_attach,
    on_exit = function(code, signal, id)
      vim.schedule(function()
        status.exited(id, code, signal)
        compat.forget(id)
      end)
    end,
  }
end

--- Starts (or reuses) the server for `bufnr`'s root and attaches the buffer.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if vim.bo[bufnr].buftype ~= '' then
    return
  end
  local cfg = client_config(root_of(bufnr))
  if not cfg then
    return
  end
  local client_id, fresh = compat.start(cfg, bufnr)
  if client_id and fresh then
    status.starting(client_id)
  end
  return client_id
end

M.attached = {}

--- Stops every diffusion-lsp client this plugin started.
function M.stop()
  for bufnr in pairs(M.attached) do
    ghost.detach(bufnr)
    draft.clear(bufnr)
  end
  M.attached = {}
  for _, client in ipairs(vim.lsp.get_clients and vim.lsp.get_clients({ name = 'diffusion-lsp' })
    or vim.lsp.get_active_clients()) do
    if client.name == 'diffusion-lsp' then
      vim.lsp.stop_client(client.id)
      compat.forget(client.id)
    end
  end
end

function M.restart()
  local buffers = vim.tbl_keys(M.attached)
  M.stop()
  vim.defer_fn(function()
    for _, bufnr in ipairs(buffers) do
      if api.nvim_buf_is_loaded(bufnr) then
        M.attach(bufnr)
      end
    end
  end, 500)
end

-- Public actions (also for the user's own mappings, e.g. a Tab that tries accept() first).
function M.accept()
  return ghost.accept(api.nvim_get_current_buf())
end

function M.accept_line()
  return ghost.accept_line(api.nvim_get_current_buf())
end

function M.dismiss()
  return ghost.dismiss(api.nvim_get_current_buf())
end

function M.suggest()
  return ghost.request(api.nvim_get_current_buf(), true)
end

--- Statusline text: "diffusion ✓" (ready), "diffusion …" (loading), "diffusion ✗" (error).
function M.statusline()
  local client = client_for(api.nvim_get_current_buf())
  return client and status.statusline(client.id) or ''
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
  command('DiffusionDismiss', M.dismiss, {})
  command('DiffusionRewrite', rewrite_command, { range = true, nargs = '?', desc = 'diffusion-lsp: rewrite with an instruction' })
  command('DiffusionFillHoles', action_command('fill_holes'), { range = '%' })
  command('DiffusionCompleteBody', action_command('complete_body'), { range = true })
  command('DiffusionFixSyntax', action_command('fix_syntax'), { range = true })
  command('DiffusionStatus', function()
    local client = client_for(api.nvim_get_current_buf())
    local entry = client and status.get(client.id)
    print(entry and ('diffusion-lsp: %s %s %s'):format(entry.state, entry.model, entry.message)
      or 'diffusion-lsp: not attached to this buffer')
  end, {})
  command('DiffusionLog', function()
    vim.cmd('tabnew ' .. vim.fn.fnameescape(vim.lsp.get_log_path()))
  end, {})
  command('DiffusionRestart', M.restart, {})
end

--- Configures the plugin and starts the server for matching buffers (see :help diffusion_lsp).
function M.setup(user)
  M.options = config.merge(user)
  local opts = M.options
  ghost.configure({ auto_trigger = opts.auto_trigger, debounce_ms = opts.debounce_ms })
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
