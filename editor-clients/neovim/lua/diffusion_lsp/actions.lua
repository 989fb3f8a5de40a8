-- The server's code actions as commands: rewrite a range with an instruction
-- (workspace/executeCommand diffusion.rewriteSelection), and "Fill holes", "Complete body",
-- "Fix syntax error" recognised by their data.action (else their kind), resolved when needed,
-- and applied.

local api = vim.api
local compat = require('diffusion_lsp.compat')
local position = require('diffusion_lsp.position')

local M = {}

M.REWRITE_COMMAND = 'diffusion.rewriteSelection'
M.RUN_ACTION_COMMAND = 'diffusion.runAction'
-- Each command's action: `data.action` (what the server puts in every action's data, and in the
-- argument of its diffusion.runAction command), the kind to ask for (`only`), and the action's
-- own kind, recognised when no data says more. Titles are for people and are never matched.
M.specs = {
  rewrite = { action = 'rewriteSelection', only = 'refactor.rewrite', kind = 'refactor.rewrite.rewriteSelection' },
  fill_holes = { action = 'fillHoles', only = 'refactor.rewrite', kind = 'refactor.rewrite.fillHoles' },
  complete_body = { action = 'completeBody', only = 'refactor.rewrite', kind = 'refactor.rewrite.completeBody' },
  fix_syntax = { action = 'fixSyntax', only = 'quickfix', kind = 'quickfix' },
}

--- The `data.action` of an offered action (or of its diffusion.runAction command), or nil.
function M.action_name(action)
  if type(action) ~= 'table' then
    return nil
  end
  if type(action.data) == 'table' and type(action.data.action) == 'string' then
    return action.data.action
  end
  local command = action.command
  if type(command) == 'table' and command.command == M.RUN_ACTION_COMMAND and type(command.arguments) == 'table'
    and type(command.arguments[1]) == 'table' and type(command.arguments[1].action) == 'string' then
    return command.arguments[1].action
  end
end

local function kind_matches(kind, wanted)
  return type(kind) == 'string' and (kind == wanted or vim.startswith(kind, wanted .. '.'))
end

--- The action among `actions` a spec names: by data.action, else (no data) by its kind.
function M.pick(actions, name)
  local spec = M.specs[name]
  for _, action in ipairs(actions or {}) do
    if M.action_name(action) == spec.action then
      return action
    end
  end
  for _, action in ipairs(actions or {}) do
    if M.action_name(action) == nil and kind_matches(action.kind, spec.kind) then
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

--- A buffer with a carriage return inside a line gets no action (the server counts it as a line
--- break, Neovim does not: the edits would land on the wrong lines). True when refused; the user is
--- told, and `done` gets the message as its error.
local function refused_for_stray_cr(bufnr, done)
  local stray = position.stray_cr(bufnr)
  if not stray then
    return false
  end
  notify(position.stray_cr_message(stray), vim.log.levels.WARN)
  if done then
    done(position.stray_cr_message(stray))
  end
  return true
end

--- Rewrites `range` of `bufnr` with `instruction` (nil: let the model rewrite freely).
--- `done(err)` is called when the server answered (its edit arrives as workspace/applyEdit).
function M.rewrite(client, bufnr, range, instruction, done)
  if refused_for_stray_cr(bufnr, done) then
    return
  end
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
  if refused_for_stray_cr(bufnr, done) then
    return
  end
  local spec = M.specs[name]
  local encoding = client.offset_encoding or 'utf-16'
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = position.range_to_lsp(bufnr, range, encoding),
    context = { diagnostics = {}, only = { spec.only }, triggerKind = 1 },
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
