import { defineConfig } from '@playwright/test';
import path from 'node:path';
import { BASE_URL, BASE_URL_B, PORT, PORT_B } from './constants';

const repo = path.join(__dirname, '..');

/** The environment of both web instances. */
const SERVER_ENV = { CLAIMDESK_CRON_INTERVAL: '1s', CLAIMDESK_WEBHOOK_ALLOW_NETWORKS: '127.0.0.0/8' };

export default defineConfig({
  testDir: __dirname,
  outputDir: path.join(repo, 'test-results'),
  // One store serves every test, and operators' claims reach across the
  // queues they are granted: tests run one at a time so that no test claims
  // the top-priority job another test just enqueued.
  fullyParallel: false,
  workers: 1,
  forbidOnly: !!process.env.CI,
  // No retries: a test that fails once is a bug to find, in the test or
  // the page, not a flake to hide.
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 5_000 },
  reporter: process.env.CI
    ? [['list'], ['html', { open: 'never', outputFolder: path.join(repo, 'playwright-report') }]]
    : [['list']],
  use: {
    baseURL: BASE_URL,
    trace: 'retain-on-failure',
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
  // Two web instances over one store, as in production behind a load
  // balancer: notices published by one reach the pages served by the other
  // through Redis. The cron runs every second so that expired reservations
  // are reclaimed promptly. Webhooks may go to the loopback, where the
  // tests start their receivers.
  webServer: [
    {
      name: 'claimdesk A',
      // A fresh scratch directory each run: seed --reset, then serve. With
      // no CLAIMDESK_REDIS_URL claimdesk runs a private redis-server under
      // .run/var/redis; A starts it, owns it and stops it when it gets
      // SIGTERM. The marker "seeded" is written only after the seed, into
      // the directory this very command has just recreated.
      command:
        `rm -rf .run && mkdir -p .run && cd .run && ../../bin/claimdesk seed --reset >seed.log ` +
        `&& touch seeded && exec ../../bin/claimdesk serve --addr 127.0.0.1:${PORT}`,
      cwd: __dirname,
      env: SERVER_ENV,
      url: `${BASE_URL}/healthz`,
      reuseExistingServer: false,
      timeout: 60_000,
      gracefulShutdown: { signal: 'SIGTERM', timeout: 15_000 },
      stdout: 'ignore',
      stderr: 'pipe',
    },
    {
      name: 'claimdesk B',
      // Same scratch directory, so it shares A's redis-server (the start
      // lock and the unix socket under .run/var/redis) and session secret.
      // It waits for this run's seed and for A to answer: A's /healthz
      // cannot answer before A's own seed is done, so a marker left over
      // from an earlier run cannot start B early. (Playwright also starts
      // the servers in order and stops them in reverse, B before A.)
      command:
        `until [ -f .run/seeded ] && curl -sf -o /dev/null ${BASE_URL}/healthz; do sleep 0.2; done ` +
        `&& cd .run && exec ../../bin/claimdesk serve --addr 127.0.0.1:${PORT_B}`,
      cwd: __dirname,
      env: SERVER_ENV,
      url: `${BASE_URL_B}/healthz`,
      reuseExistingServer: false,
      timeout: 60_000,
      gracefulShutdown: { signal: 'SIGTERM', timeout: 15_000 },
      stdout: 'ignore',
      stderr: 'pipe',
    },
  ],
});
