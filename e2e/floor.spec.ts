import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { authFile, RUN_DIR } from './constants';
import { expect, test } from './fixtures';

// A floor behind one address: a live page beyond the cap on connections
// from one address says that its live updates are paused, and why.

const claimdesk = path.join(__dirname, '..', 'bin', 'claimdesk');

/** A loopback port nothing listens on now. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Waits for the instance at url to answer its health check. */
async function healthy(url: string, server: ChildProcess) {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
    if (server.exitCode !== null) throw new Error(`claimdesk exited with ${server.exitCode}`);
    const ok = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer in 20 s`);
}

test.describe('a cap on live connections from one address', () => {
  let server: ChildProcess;
  let url = '';

  // A third instance over the suite's store, with room for one live page
  // from an address: every page of this machine comes from 127.0.0.1.
  test.beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    server = spawn(claimdesk, ['serve', '--addr', `127.0.0.1:${port}`, '--ws-per-address', '1'], {
      cwd: RUN_DIR,
      stdio: 'ignore',
    });
    await healthy(url, server);
  });

  test.afterAll(async () => {
    if (server.exitCode !== null) return;
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  });

  test('a page beyond the cap says live updates are paused: too many connections from your network', async ({
    browser,
  }) => {
    const context = await browser.newContext({ baseURL: url, storageState: authFile('alice') });
    const first = await context.newPage();
    await first.goto('/');
    await expect(first.getByTestId('live')).toHaveAttribute('data-state', 'live');
    await expect(first.getByTestId('live-paused')).toBeHidden();

    const second = await context.newPage();
    await second.goto('/');
    const paused = second.getByTestId('live-paused');
    await expect(paused).toBeVisible();
    await expect(paused).toContainText('Live updates paused: too many connections from your network');
    await expect(second.getByTestId('live')).toHaveAttribute('data-state', 'paused');
    // The server was reached: the page does not say it is offline.
    await expect(second.getByTestId('offline')).toBeHidden();
    // The first page stays live.
    await expect(first.getByTestId('live')).toHaveAttribute('data-state', 'live');
    await context.close();
  });
});
