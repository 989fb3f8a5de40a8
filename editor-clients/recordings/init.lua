-- Minimal Neovim configuration for the recordings (record.sh starts `nvim -u` this file inside
-- tmux). It loads the plugin from editor-clients/neovim exactly as a user would, and adds a
-- log of what happened (status, drafts painted, ghost text shown, the accepted text) so the
-- recorder can label the frames it captures from the terminal.
--
-- Environment (set by record.py):
--   RECORD_PLUGIN    editor-clients/neovim
--   RECORD_SERVER    the diffusion-lsp executable
--   RECORD_SETTINGS  server settings as JSON (model, steps, validate, draftIntervalMs, ...)
--   RECORD_EVENTS    file the event log is appended to: "<monotonic ns>\t<kind>\t<detail>"
--   RECORD_HOLD_MS   keep each painted draft on screen at least this long (0: real time)

local api = vim.api
local env = vim.env

vim.opt.runtimepath:append(env.RECORD_PLUGIN)
vim.o.termguicolors = true
vim.o.swapfile = false
vim.o.number = true
vim.o.laststatus = 2
vim.o.ruler = false
vim.o.showmode = true
vim.o.shortmess = vim.o.shortmess .. 'I'
vim.o.statusline = ' %f%m%=%{luaeval("require(\'diffusion_lsp\').statusline()")}   %l:%c '
vim.cmd('filetype plugin indent on')
vim.cmd('syntax on')
-- A fixed background, so the draft shades (blended from Comment toward Normal's background)
-- are the ones the renderer shows.
vim.cmd('highlight Normal guifg=#d0d0d0 guibg=#1c1c1c')

local events = assert(io.open((assert(env.RECORD_EVENTS, 'RECORD_EVENTS not set')), 'a'))
local function log(kind, detail)
  detail = tostring(detail or ''):gsub('\n', '\\n')
  events:write(('%d\t%s\t%s\n'):format(vim.loop.hrtime(), kind, detail))
  events:flush()
end

local draft = require('diffusion_lsp.draft')
local ghost = require('diffusion_lsp.ghost')
local status = require('diffusion_lsp.status')
local hold_ms = tonumber(env.RECORD_HOLD_MS or '0') or 0

-- Wrap the draft handler (before setup(), which hands it to the client): after the plugin has
-- painted a draft, draw it now and log it; then hold it on screen so the recorder's poller,
-- which captures every ~20 ms, sees every step. Notifications that arrive meanwhile queue up;
-- the server is not slowed down.
local paint = draft.handler
draft.handler = function(err, params, ctx)
  paint(err, params, ctx)
  if type(params) ~= 'table' then
    return
  end
  local bufnr = api.nvim_get_current_buf()
  if params.done then
    log('draft-done', ('step %s: %s'):format(params.step, params.text))
  elseif draft.visible(bufnr) then
    -- Logged before it is drawn, so a captured frame never shows more than the log says.
    log('draft', ('step %s: %s'):format(params.step, params.text))
    vim.cmd('redraw')
    if hold_ms > 0 then
      vim.loop.sleep(hold_ms)
    end
  end
end

ghost.on_change(function(bufnr, event)
  local suggestion = ghost.get(bufnr)
  log('ghost-' .. event, suggestion and suggestion.text or '')
  if event == 'show' then
    vim.cmd('redraw')
  end
end)

api.nvim_create_autocmd('User', {
  pattern = 'DiffusionLspStatus',
  callback = function()
    for _, client in ipairs(vim.lsp.get_active_clients()) do
      if client.name == 'diffusion-lsp' then
        local entry = status.get(client.id)
        log('status', entry and entry.state or '?')
      end
    end
  end,
})

-- TextChangedI runs before the screen is updated.
api.nvim_create_autocmd('TextChangedI', {
  callback = function()
    local row = api.nvim_win_get_cursor(0)[1]
    log('changed', table.concat(api.nvim_buf_get_lines(0, math.max(row - 3, 0), row, false), '\n'))
  end,
})

vim.notify = function(message, level)
  log('notify', message)
  api.nvim_echo({ { tostring(message), (level or 0) >= vim.log.levels.WARN and 'WarningMsg' or 'None' } }, true, {})
end

require('diffusion_lsp').setup({
  cmd = { (assert(env.RECORD_SERVER, 'RECORD_SERVER not set')) },
  settings = vim.fn.json_decode(env.RECORD_SETTINGS or '{}'),
  drafts = true,
  -- Only the trigger key asks, so the recording is the same every time.
  auto_trigger = false,
})
log('init', vim.version and ('nvim %d.%d.%d'):format(vim.version().major, vim.version().minor, vim.version().patch) or '')
