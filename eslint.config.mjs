import tseslint from 'typescript-eslint';

/**
 * The TypeScript linted with its types: what the root tsconfig.json compiles, and the typed client
 * with its own tsconfig (the project service finds the nearest one). The console has its own, and is not.
 */
const TYPED = ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'clients/*/src/**/*.ts'];

export default tseslint.config(
  // The client's generated types (npm run client:generate) are openapi-typescript's, not ours.
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'coverage/**', 'clients/*/dist/**', 'clients/*/src/schema.d.ts'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // A promise nobody awaits loses its rejection (an unhandled rejection ends the process): each
    // one is awaited, or voided where running in the background is meant and its errors are handled.
    files: TYPED,
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: { '@typescript-eslint/no-floating-promises': 'error' },
  },
  {
    // Plain CommonJS scripts (jest's global setup, child processes of the crash tests) run without ts-jest.
    files: ['**/*.js'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
