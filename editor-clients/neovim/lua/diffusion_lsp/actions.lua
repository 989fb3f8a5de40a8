-- The server's code actions as commands: rewrite a range with an instruction
-- (workspace/executeCommand diffusion.rewriteSelection), and "Fill holes", "Complete body",
-- "Fix syntax error" found by kind and title, resolved when needed, and applied.

local api = vim.api
local compat = require('diffusion_lsp.compat')
local position = require('diffusion_lsp.position')

local M = {}

M.REWRITE_COMMAND = 'diffusion.rewriteSelection'
M.specs = {
  rewrite = { kind = 'refactor.rewrite', title = '^[Rr]ewrite selection' },
  fill_holes = { kind = 'refactor.rewrite', title = '^[Ff]ill %d+ holes?' },
  complete_body = { kind = 'refactor.rewrite', title = '^[Cc]omplete body' },
  fix_syntax = { kind = 'quickfix', title = '^[Ff]ix syntax error' },
}

local function kind_matches(kind, wanted)
  return kind == nil or kind == wanted or vim.startswith(kind, wanted .. '.')
end

--- The action among `actions` a spec names, or nil.
function M.pick(actions, name)
  local spec = M.specs[name]
  for _, action in ipairs(actions or {}) do
    if action.title and kind_matches(action.kind, spec.kind) and action.title:find(spec.title) then
      return action
    end
  end
end

--- The range a command covers: the visual selection when the command came from it
--- (characterwise kept exact), else whole lines line1..line2. 0-based, end exclusive.
function M.command_range(bufnr, line1, line2)
  local vstart = api.nvim_buf_get_mark(bufnr, '<')
  local vend = api.nvim_buf_get_mark(bufnr, '>')
  if vim.fn.visualmode() == 'v' and vstart[1] == line1 and vend[1] == line2 then
    local last = api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ''
    -- The end mark is on the last selected character; include all of its bytes.
    local stop = math.min(vend[2], #last)
    local char_end = stop + #vim.fn.strcharpart(last:sub(stop + 1), 0, 1)
    return { start = { line1 - 1, vstart[2] }, ['end'] = { line2 - 1, math.max(char_end, stop) } }
  end
  local count = api.nvim_buf_line_count(bufnr)
  if line2 < count then
    return { start = { line1 - 1, 0 }, ['end'] = { line2, 0 } }
  end
  local last = api.nvim_buf_get_lines(bufnr, count - 1, count, false)[1] or ''
  return { start = { line1 - 1, 0 }, ['end'] = { count - 1, #last } }
end

--- The argument of diffusion.rewriteSelection; a blank instruction is left out.
function M.rewrite_argument(uri, version, range, instruction)
  local argument = { uri = uri, version = version, range = range }
  if instruction and vim.trim(instruction) ~= '' then
    argument.instruction = vim.trim(instruction)
  end
  return argument
end

local function notify(message, level)
  vim.notify('diffusion-lsp: ' .. message, level or vim.log.levels.INFO)
end

--- Rewrites `range` of `bufnr` with `instruction` (nil: let the model rewrite freely).
--- `done(err)` is called when the server answered (its edit arrives as workspace/applyEdit).
function M.rewrite(client, bufnr, range, instruction, done)
  local encoding = client.offset_encoding or 'utf-16'
  local argument = M.rewrite_argument(
    vim.uri_from_bufnr(bufnr),
    vim.lsp.util.buf_versions[bufnr] or api.nvim_buf_get_changedtick(bufnr),
    position.range_to_lsp(bufnr, range, encoding),
    instruction
  )
  notify('rewriting…')
  compat.request(client, 'workspace/executeCommand', { command = M.REWRITE_COMMAND, arguments = { argument } }, function(err)
    if err then
      notify('rewrite failed: ' .. (err.message or tostring(err)), vim.log.levels.WARN)
    end
    if done then
      done(err)
    end
  end, bufnr)
end

local function apply_action(client, bufnr, action, done)
  if action.edit then
    vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding or 'utf-16')
  end
  if action.command then
    local command = type(action.command) == 'table' and action.command or { command = action.command }
    compat.request(client, 'workspace/executeCommand', { command = command.command, arguments = command.arguments },
      function(err)
        if err then
          notify(err.message or tostring(err), vim.log.levels.WARN)
        end
        if done then
          done(err)
        end
      end, bufnr)
  elseif done then
    done(nil)
  end
end

--- Asks for the server's actions of `name`'s kind over `range` and runs the one it names.
--- `done(err, action)` is called at the end (action nil when none was offered).
function M.run(client, bufnr, name, range, done)
  local spec = M.specs[name]
  local encoding = client.offset_encoding or 'utf-16'
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = position.range_to_lsp(bufnr, range, encoding),
    context = { diagnostics = {}, only = { spec.kind }, triggerKind = 1 },
  }
  local function finish(err, action)
    if done then
      done(err, action)
    end
  end
  compat.request(client, 'textDocument/codeAction', params, function(err, result)
    if err then
      notify(err.message or tostring(err), vim.log.levels.WARN)
      return finish(err)
    end
    local action = M.pick(result, name)
    if not action then
      notify('nothing to do here for "' .. name:gsub('_', ' ') .. '"')
      return finish(nil, nil)
    end
    if action.edit or action.command then
      return apply_action(client, bufnr, action, function(e)
        finish(e, action)
      end)
    end
    compat.request(client, 'codeAction/resolve', action, function(rerr, resolved)
      if rerr or not resolved then
        notify((rerr and rerr.message) or 'the action could not be resolved', vim.log.levels.WARN)
        return finish(rerr or 'unresolved', action)
      end
      apply_action(client, bufnr, resolved, function(e)
        finish(e, resolved)
      end)
    end, bufnr)
  end, bufnr)
end

return M
