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

test.describe('the smaller pages', () => {
  test('a producer granted every queue as its own choice, a token copied and the page reloaded, the audit filtered', async ({
    openAs,
  }) => {
    // Three pages walked through, a dozen steps.
    test.setTimeout(60_000);
    const sam = await openAs('sam');
    const name = `bot-e2e-${Date.now() % 1_000_000}`;
    await sam.goto('/supervisor/people');
    const add = sam.getByTestId('add-person');
    await add.getByLabel('Name').fill(name);
    await add.getByLabel('Role').selectOption('producer');
    // None ticked is not every queue unasked: the page asks for the choice.
    await add.getByTestId('grant-some').check();
    await add.getByRole('button', { name: 'Add person' }).click();
    await expect(sam.getByTestId('person-problem')).toHaveText('Tick the queues they may fill, or choose All queues.');
    await sam.getByTestId('add-person').getByTestId('grant-all').check();
    await sam.getByTestId('add-person').getByRole('button', { name: 'Add person' }).click();
    await expect(sam).toHaveURL(new RegExp(`/supervisor/people/${name}$`));
    await expect(sam.getByTestId('grant-all')).toBeChecked();

    // A token, shown once with a Copy button; a reload makes no other.
    await sam.getByTestId('new-token-form').getByRole('button', { name: 'New API token' }).click();
    await expect(sam).toHaveURL(new RegExp(`/supervisor/people/${name}$`));
    await expect(sam.getByTestId('token')).toHaveText(/^cdt_/);
    await sam.getByTestId('copy-token').click();
    await expect(sam.getByTestId('new-token').getByRole('status')).toHaveText(/Copied\.|Selected/);
    await sam.reload();
    await expect(sam.getByTestId('new-token')).toHaveCount(0);
    await expect(sam.getByTestId('tokens').getByRole('row')).toHaveCount(2); // the header and the one token

    // The audit log in words, filtered by who and what, in the URL.
    await sam.goto('/supervisor/audit');
    const filter = sam.getByTestId('audit-filter');
    await filter.getByLabel('Who').fill('sam');
    await filter.getByLabel('What').selectOption({ label: 'Made an API token' });
    await filter.getByRole('button', { name: 'Filter' }).click();
    await expect(sam).toHaveURL(/who=sam/);
    await expect(sam).toHaveURL(/action=token\.added/);
    const row = sam.getByTestId('audit').getByRole('row').filter({ hasText: name });
    await expect(row.getByTestId('audit-action')).toHaveText('Made an API token');
    await expect(sam.getByTestId('audit-action').filter({ hasNotText: 'Made an API token' })).toHaveCount(0);
    await filter.getByLabel('Who').fill('nobody-e2e');
    await filter.getByRole('button', { name: 'Filter' }).click();
    await expect(sam.getByTestId('no-audit')).toHaveText('Nothing matches these filters.');
  });

  test('the header takes two rows on a phone, its pages on one line', async ({ openAs }) => {
    const sam = await openAs('sam', 'A', { viewport: { width: 390, height: 844 } });
    await sam.goto('/supervisor/audit');
    const nav = sam.getByRole('navigation', { name: 'Main' });
    const links = nav.getByRole('link');
    await expect(links).toHaveCount(6);
    const navBox = await nav.boundingBox();
    if (!navBox) throw new Error('the navigation has no box');
    const tops = new Set<number>();
    for (const box of await Promise.all((await links.all()).map((l) => l.boundingBox()))) {
      if (!box) throw new Error('a page link has no box');
      tops.add(Math.round(box.y));
      // Each link whole in view, none scrolled out of the navigation.
      expect(box.x + box.width).toBeLessThanOrEqual(navBox.x + navBox.width + 0.5);
    }
    expect(tops.size).toBe(1);
    const brand = await sam.getByRole('link', { name: 'claimdesk' }).boundingBox();
    const logout = await sam.getByRole('button', { name: 'Log out' }).boundingBox();
    // Brand and Log out share the first row.
    expect(brand && logout && Math.abs(brand.y - logout.y) < 12).toBe(true);
  });
});
