import tseslint from 'typescript-eslint';

/** The TypeScript the root tsconfig.json compiles: linted with its types (the console has its own, and is not). */
const TYPED = ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'];

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'coverage/**'] },
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
