import { defineConfig } from '@playwright/test';
import path from 'node:path';
import { BASE_URL, PORT } from './constants';

const repo = path.join(__dirname, '..');

export default defineConfig({
  testDir: __dirname,
  outputDir: path.join(repo, 'test-results'),
  // One server and one store serve every test, and operators' claims reach
  // across the queues they are granted: tests run one at a time so that no
  // test claims the top-priority job another test just enqueued.
  fullyParallel: false,
  workers: 1,
  forbidOnly: !!process.env.CI,
  retries: process.env.CI ? 1 : 0,
  timeout: 30_000,
  expect: { timeout: 5_000 },
  reporter: process.env.CI
    ? [['list'], ['html', { open: 'never', outputFolder: path.join(repo, 'playwright-report') }]]
    : [['list']],
  use: {
    baseURL: BASE_URL,
    trace: 'on-first-retry',
    browserName: 'chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
    },
  },
  projects: [
    { name: 'setup', testMatch: /.*\.setup\.ts/ },
    {
      name: 'chromium',
      testMatch: /.*\.spec\.ts/,
      dependencies: ['setup'],
    },
  ],
  webServer: {
    // A fresh scratch directory each run: seed --reset, then serve. With no
    // CLAIMDESK_REDIS_URL claimdesk runs a private redis-server under
    // .run/var/redis and stops it when it gets SIGTERM.
    command:
      `rm -rf .run && mkdir -p .run && cd .run && ../../bin/claimdesk seed --reset >seed.log ` +
      `&& exec ../../bin/claimdesk serve --addr 127.0.0.1:${PORT}`,
    cwd: __dirname,
    url: `${BASE_URL}/healthz`,
    reuseExistingServer: false,
    timeout: 60_000,
    gracefulShutdown: { signal: 'SIGTERM', timeout: 15_000 },
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
