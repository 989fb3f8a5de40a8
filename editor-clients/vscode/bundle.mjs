// Bundles the extension (dist/extension.js, what the .vsix ships) with esbuild, applying a fix to a
// bundled library that the extension cannot reach from its own code:
//
// vscode-jsonrpc 8.2.0's sendRequest writes the request inside `new Promise(async (resolve, reject) => ...)`;
// when the write fails (the server exited as it started: "Cannot call write after a stream was destroyed",
// EPIPE) it rejects the request's promise, which the caller handles, and then rethrows from the async
// executor, a second rejection that nothing can handle: VS Code's extension host logs an unhandled
// rejection for every start of a broken server. The fix upstream (microsoft/vscode-languageserver-node
// pull request 1855) removes the rethrow; so does this. The build fails if the text is not found (a new
// version of the library: check whether it still needs the fix, and drop it here if not).
import * as esbuild from 'esbuild';
import { readFile } from 'node:fs/promises';

const FIXES = [
  {
    file: /vscode-jsonrpc[\\/]lib[\\/]common[\\/]connection\.js$/,
    what: 'no rethrow after a failed request write (upstream pull request 1855)',
    from:
      "responsePromise.reject(new messages_1.ResponseError(messages_1.ErrorCodes.MessageWriteError, error.message ? error.message : 'Unknown reason'));\n" +
      '                    throw error;',
    to: "responsePromise.reject(new messages_1.ResponseError(messages_1.ErrorCodes.MessageWriteError, error.message ? error.message : 'Unknown reason'));",
  },
];

const applied = new Set();
const libraryFixes = {
  name: 'library-fixes',
  setup(build) {
    for (const fix of FIXES) {
      build.onLoad({ filter: fix.file }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        if (!source.includes(fix.from)) {
          throw new Error(`${args.path}: the text to fix (${fix.what}) is not there; see bundle.mjs`);
        }
        applied.add(fix);
        return { contents: source.replace(fix.from, fix.to), loader: 'js' };
      });
    }
  },
};

await esbuild.build({
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  external: ['vscode'],
  format: 'cjs',
  platform: 'node',
  target: 'node18',
  minify: !process.argv.includes('--no-minify'),
  keepNames: true,
  plugins: [libraryFixes],
  logLevel: 'info',
});
const missed = FIXES.filter((fix) => !applied.has(fix));
if (missed.length > 0) {
  throw new Error(`bundle.mjs: not applied (the file was not bundled): ${missed.map((fix) => fix.what).join('; ')}`);
}
