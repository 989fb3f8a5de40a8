// Lint rules for the extension: ESLint's and typescript-eslint's recommended sets, plus a
// guard that keeps the pure modules (unit-tested without VS Code) free of the vscode import.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['out/**', 'node_modules/**', '*.vsix'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      eqeqeq: 'error',
      curly: 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/settings.ts', 'src/serverCommand.ts', 'src/status.ts', 'src/draft.ts', 'src/actions.ts', 'src/inlineContext.ts', 'test/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: ['vscode', 'vscode-languageclient', 'vscode-languageclient/node'] }],
    },
  },
);
