import tseslint from 'typescript-eslint';
import nx from '@nx/eslint-plugin';
import importX from 'eslint-plugin-import-x';

export default tseslint.config(
  {
    ignores: ['**/node_modules/**', '**/dist/**', '**/.nx/**', 'coverage/**', '**/fixtures/**', '**/*.js', '**/*.mjs'],
  },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['vitest.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { '@nx': nx, 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      '@nx/enforce-module-boundaries': [
        'error',
        {
          allow: [],
          depConstraints: [
            { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:service', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:test', onlyDependOnLibsWithTags: ['type:lib', 'type:service'] },
            { sourceTag: 'scope:core', onlyDependOnLibsWithTags: ['scope:core', 'scope:agent', 'scope:testing'] },
            { sourceTag: 'scope:agent', onlyDependOnLibsWithTags: ['scope:core', 'scope:agent', 'scope:testing'] },
          ],
        },
      ],
    },
  },
  {
    // production code of libs: no console, and the test harness only from tests
    files: ['libs/**/src/**/*.ts', 'services/**/src/**/*.ts'],
    ignores: ['**/*.test.ts', '**/test-support/**', '**/testing/**', 'libs/testing/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: '@flotilla/testing', message: 'the test harness is for tests only' }] },
      ],
    },
  },
  {
    files: ['libs/**/src/**/*.ts'],
    ignores: ['**/*.test.ts', '**/*.bench.ts', '**/test-support/**', '**/testing/**'],
    rules: { 'no-console': 'error' },
  },
);
