import { defineConfig } from 'vitest/config';

const shared = {
  environment: 'node' as const,
  pool: 'forks' as const,
  testTimeout: 30_000,
  hookTimeout: 60_000,
};

export default defineConfig({
  test: {
    reporters: ['default', './tests/support/summary-reporter.ts'],
    projects: [
      {
        // libraries: unit and integration tests (each suite starts its own nats-server)
        test: { ...shared, name: 'libs', include: ['libs/**/*.test.ts', 'services/**/*.test.ts'], exclude: ['**/node_modules/**', '**/dist/**'] },
      },
      {
        // whole-system tests: several service processes each, so one file at a time
        test: { ...shared, name: 'system', include: ['tests/**/*.test.ts'], exclude: ['**/node_modules/**', '**/dist/**'], fileParallelism: false },
      },
    ],
  },
});
