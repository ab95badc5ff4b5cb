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
        // libraries: unit and integration tests (each suite starts its own nats-server), two files
        // at a time even on 2 cores (vitest's default leaves one core idle, and they wait on I/O);
        // the system tests run after them, one file at a time
        test: {
          ...shared,
          name: 'libs',
          maxWorkers: 2,
          include: ['libs/**/*.test.ts', 'services/**/*.test.ts'],
          exclude: ['**/node_modules/**', '**/dist/**'],
        },
      },
      {
        // whole-system tests: several service processes each, so one file at a time
        test: {
          ...shared,
          name: 'system',
          include: ['tests/**/*.test.ts'],
          exclude: ['**/node_modules/**', '**/dist/**', 'tests/soak/**'],
          fileParallelism: false,
        },
      },
      {
        // load, soak and chaos runs through the services (`npm run test:soak`): apart from the suite, which they would lengthen by minutes
        test: {
          ...shared,
          name: 'soak',
          include: ['tests/soak/**/*.test.ts'],
          exclude: ['**/node_modules/**', '**/dist/**'],
          fileParallelism: false,
        },
      },
    ],
  },
});
