-- Options of the plugin: defaults, merging the user's table, and the server settings
-- (initializationOptions) derived from them.

local M = {}

M.defaults = {
  -- The server command; a bare name is looked up on $PATH, then in <root>/.venv/bin and
  -- <root>/venv/bin, then in the .venv of the diffusion-lsp checkout this plugin is part of
  -- (what scripts/setup.sh makes).
  cmd = { 'diffusion-lsp' },
  -- the five languages with a grammar, and those filled as plain text with a check grammar and workspace lines
  filetypes = { 'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact', 'go', 'rust', 'c', 'cpp',
                'java', 'ruby', 'perl', 'lua' },
  -- Function(bufnr) -> directory the server is started for (one server per directory). Default
  -- (`M.root_for`): the working directory for a file in it when it is (in) a project, else the file's project
  -- (the nearest folder above it with one of `M.root_markers`), else the working directory. The server counts
  -- that folder's source files for its workspace lines.
  root_dir = nil,
  -- Server settings, as in docs/PROTOCOL.md; snake_case keys are accepted too.
  settings = {},
  -- Request a suggestion while typing (after `debounce_ms` without a keystroke).
  auto_trigger = true,
  debounce_ms = 120,
  -- Paint the suggestion while it develops (diffusion/draft).
  drafts = true,
  -- 'auto': Neovim's vim.lsp.inline_completion where it exists (0.12+), else the plugin's
  -- own ghost text; 'native' or 'plugin' to force one.
  ghost_text = 'auto',
  -- Insert-mode keys; false disables one. Accept keys fall through when nothing is shown.
  keys = {
    accept = '<Tab>',
    accept_line = '<S-Tab>',
    accept_word = '<M-Right>',
    next = '<M-]>', -- the server's next alternative (cycles)
    prev = '<M-[>',
    dismiss = '<C-]>',
    trigger = '<M-\\>',
  },
  -- A server that dies is restarted up to `retries` times in a row (after delay_ms, doubling
  -- each time; the count starts again once a server has run for a minute); 0: never.
  restart = { retries = 3, delay_ms = 1000 },
  -- Show vim.notify messages for model ready (errors are always shown).
  notify_ready = false,
}

local function is_list(t)
  return type(t) == 'table' and (#t > 0 or next(t) == nil)
end

--- The defaults with the user's table laid over them (lists replace, tables merge).
function M.merge(user)
  local merged = vim.deepcopy(M.defaults)
  for key, value in pairs(user or {}) do
    if type(value) == 'table' and type(merged[key]) == 'table' and not is_list(merged[key]) then
      merged[key] = vim.tbl_extend('force', merged[key], value)
    else
      merged[key] = value
    end
  end
  if type(merged.cmd) == 'string' then
    merged.cmd = { merged.cmd }
  end
  return merged
end

local function camel(key)
  return (key:gsub('_(%l)', function(c)
    return c:upper()
  end))
end

--- The server's settings object: user settings with camelCase keys, plus `drafts` from the
--- plugin option unless the user set it in `settings`.
function M.server_settings(opts)
  local settings = {}
  for key, value in pairs(opts.settings or {}) do
    settings[camel(key)] = value
  end
  if settings.drafts == nil then
    settings.drafts = opts.drafts and true or false
  end
  return settings
end

-- This file is <checkout>/editor-clients/neovim/lua/diffusion_lsp/config.lua.
local here = debug.getinfo(1, 'S').source:sub(2)
M.checkout = vim.fn.fnamemodify(here, ':p:h:h:h:h:h')

-- What marks a project's folder: a repository, or a package of one of the server's languages.
M.root_markers = { '.git', 'pyproject.toml', 'setup.py', 'setup.cfg', 'package.json', 'tsconfig.json', 'go.mod',
  'Cargo.toml', 'CMakeLists.txt', 'meson.build', 'pom.xml', 'build.gradle', 'Gemfile', 'Makefile.PL' }

--- The nearest folder from `dir` up that has one of `M.root_markers` in it, or nil.
local function marked_above(dir)
  while dir and dir ~= '' do
    for _, marker in ipairs(M.root_markers) do
      if vim.loop.fs_stat(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      return nil
    end
    dir = parent
  end
  return nil
end

--- The project of the file at `path`: the nearest folder that holds it (its own folder first) and has one of
--- `M.root_markers` in it; nil for no such folder, or a name that is no file path (a URI, an unnamed buffer).
function M.project_root(path)
  if not path or path == '' or path:match('^%a[%w+.-]*://') then
    return nil
  end
  return marked_above(vim.fn.fnamemodify(path, ':p:h'))
end

--- The folder the server for the file at `path` runs for, `cwd` the working directory: `cwd` when the file is
--- in it and it is (in) a project, so one server serves the project the user works in, subpackages included;
--- else the file's own project (a file elsewhere, or a working directory such as the home folder that is no
--- project); else `cwd`.
function M.root_for(path, cwd)
  local project = M.project_root(path)
  if project == nil then
    return cwd
  end
  local file = vim.fn.resolve(vim.fn.fnamemodify(path, ':p'))   -- a link on either side: compared where it leads
  local real = vim.fn.resolve(cwd)
  local prefix = real:sub(-1) == '/' and real or real .. '/'
  if file:sub(1, #prefix) == prefix and marked_above(cwd) then
    return cwd
  end
  return project
end

--- Resolves cmd[1]: as given when executable, else <root>/.venv/bin/<name> (or venv), else the
--- plugin's own checkout's .venv/bin/<name>. Returns the command list, or nil and the places
--- looked at.
function M.resolve_cmd(cmd, root, checkout)
  checkout = checkout or M.checkout
  local name = cmd[1]
  if vim.fn.executable(name) == 1 then
    return cmd
  end
  local looked = { name .. ' (on $PATH)' }
  if not name:find('/', 1, true) then
    local candidates = {}
    for _, venv in ipairs({ '.venv', 'venv' }) do
      candidates[#candidates + 1] = (root or vim.fn.getcwd()) .. '/' .. venv .. '/bin/' .. name
    end
    if checkout and checkout ~= '' then
      candidates[#candidates + 1] = checkout .. '/.venv/bin/' .. name
    end
    for _, candidate in ipairs(candidates) do
      if not vim.tbl_contains(looked, candidate) then
        table.insert(looked, candidate)
        if vim.fn.executable(candidate) == 1 then
          local resolved = vim.deepcopy(cmd)
          resolved[1] = candidate
          return resolved
        end
      end
    end
  end
  return nil, looked
end

return M
