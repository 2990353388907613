import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Imports a lower layer may never make (dependency-cruiser checks the whole graph; this flags them in the editor). */
const upward = (layers) => ({
  'no-restricted-imports': [
    'error',
    { patterns: [{ regex: `(^|/)(${layers.join('|')})/`, message: 'Layers point down only (docs/architecture.md).' }] },
  ],
});

export default tseslint.config(
  { ignores: ['.dependency-cruiser.cjs', 'node_modules/', 'dist/', 'data/', '.data-test/', 'src/dashboard/public/vendor/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['error', 'warn'] }],
      eqeqeq: ['error', 'always'],
    },
  },
  { files: ['src/core/**'], rules: upward(['lib', 'db', 'ledger', 'rails', 'http', 'modules', 'dashboard', 'workers']) },
  { files: ['src/lib/**', 'src/db/**', 'src/ledger/**', 'src/rails/**'], rules: upward(['http', 'modules', 'dashboard', 'workers']) },
  { files: ['src/http/**'], rules: upward(['modules', 'dashboard', 'workers']) },
  {
    files: ['src/cli.ts', 'src/main.ts', 'bench/**', 'test/**'],
    rules: { 'no-console': 'off' },
  },
  {
    // Tests read JSON responses whose shape the assertions check.
    files: ['test/**', 'src/**/*.test.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', 'no-restricted-imports': 'off' },
  },
  {
    // Tests beside the code are units; a suite that starts the app over HTTP lives in test/.
    files: ['src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)test/harness\\.js$',
              importNames: ['startTestApp', 'clientFor'],
              message: 'HTTP suites live in test/; tests beside the code are units (docs/architecture.md).',
            },
          ],
        },
      ],
    },
  },
);
