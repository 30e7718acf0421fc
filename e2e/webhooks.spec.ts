import { OperatorApi } from './api';
import { authFile, BASE_URL } from './constants';
import { expect, test } from './fixtures';
import { WebhooksPage } from './pages/WebhooksPage';
import { Receiver } from './receiver';
import { checkScreen, SCREENS } from './screen';

// The supervisors' webhooks, against a real receiver on the loopback (the
// servers may reach 127.0.0.0/8, playwright.config.ts): a webhook added
// shows its secret once; each job completed reaches the receiver signed
// and is shown delivered, or failed with the receiver's answer, and
// replayed; a receiver that answers 410 Gone gets its webhook disabled,
// which every page's navigation marks until it is resumed.

/** The webhooks a test made: removed after it, whatever became of the test. */
const made: string[] = [];

test.afterEach(async ({ playwright }) => {
  const sam = await playwright.request.newContext({ baseURL: BASE_URL, storageState: authFile('sam') });
  try {
    for (const id of made.splice(0)) {
      const page = await sam.get(`/webhooks/${id}`);
      if (page.status() === 404) continue;
      const csrf = (await page.text()).match(/data-csrf="([^"]+)"/)?.[1];
      if (!csrf) throw new Error(`no CSRF token on /webhooks/${id}`);
      const res = await sam.post(`/webhooks/${id}/remove`, { headers: { 'X-CSRF-Token': csrf }, maxRedirects: 0 });
      expect(res.status(), `cleanup remove of ${id}`).toBe(303);
    }
  } finally {
    await sam.dispose();
  }
});

test('a supervisor adds a webhook and sees its secret once, follows its deliveries and replays one, then pauses, rotates and removes it', async ({
  openAs,
  jobs,
}) => {
  test.setTimeout(60_000);
  const receiver = new Receiver();
  const url = await receiver.start();
  try {
    const page = await openAs('sam');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    const hooks = new WebhooksPage(page);
    await hooks.goto();
    await hooks.add(url, { queues: ['address-verification'], events: ['job.completed', 'job.dead'] });

    // Its secret, shown this once, with a button that copies it.
    await expect(page.getByRole('heading', { name: 'Added: its signing secret' })).toBeVisible();
    const id = await hooks.openId();
    made.push(id);
    await expect(page.getByTestId('new-secret')).toContainText('Copy it now: it will not be shown again.');
    const secret = ((await hooks.secret.textContent()) ?? '').trim();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    await hooks.copy.click();
    await expect(page.getByTestId('new-secret').getByRole('status')).toHaveText('Copied.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    receiver.secrets = [secret];
    await page.goto(`/webhooks/${id}`);
    await expect(page.getByTestId('no-deliveries')).toBeVisible();
    await expect(hooks.secret).toHaveCount(0);
    await expect(page.getByText(secret)).toHaveCount(0);

    // A job completed reaches the receiver signed, and the page, which
    // looks again every few seconds, shows it delivered.
    const carol = new OperatorApi((await openAs('carol')).request);
    const complete = async (label: string) => {
      const job = await jobs.create('address-verification', label);
      const claim = await carol.claim('address-verification');
      expect(claim?.job.id, 'carol claims the job just made').toBe(job.id);
      await carol.complete(claim!);
      return job;
    };
    const job = await complete('Verify address E2E-HOOK-1');
    await expect.poll(() => receiver.received.length).toBe(1);
    const first = receiver.received[0];
    expect(first).toMatchObject({ type: 'job.completed', data: { id: job.id, title: job.title }, signed: true, status: 204 });
    const delivered = hooks.delivery(first.id);
    await expect(delivered.getByTestId('delivery-state')).toHaveText('succeeded', { timeout: 10_000 });
    await expect(delivered.getByTestId('last-answer')).toHaveText('204 No Content');
    await expect(delivered.getByRole('link', { name: job.title })).toHaveAttribute('href', `/jobs/${job.id}`);

    // The receiver fails: the delivery waits for its next attempt, with
    // the receiver's answer.
    receiver.status = 500;
    receiver.body = 'database is down';
    const failedJob = await complete('Verify address E2E-HOOK-2');
    await expect.poll(() => receiver.received.length).toBe(2);
    const second = receiver.received[1];
    expect(second).toMatchObject({ data: { id: failedJob.id }, signed: true, status: 500 });
    await page.reload();
    const failing = hooks.delivery(second.id);
    await expect(failing.getByTestId('delivery-state')).toHaveText('pending');
    await expect(failing.getByTestId('last-answer')).toContainText('500 Internal Server Error');
    await expect(failing.getByTestId('last-answer')).toContainText('database is down');
    for (const screen of SCREENS) {
      await page.setViewportSize(screen.viewport);
      await checkScreen(page, `a webhook's deliveries, on a ${screen.name}`, screen.name === 'phone');
    }

    // Mended, the receiver gets it again as soon as it is replayed.
    receiver.status = 204;
    receiver.body = '';
    await failing.getByRole('button', { name: /^Replay/ }).click();
    await expect(hooks.flash).toHaveText(`Replaying job.completed of “${failedJob.title}”: its first attempt is due now.`);
    await expect.poll(() => receiver.of(second.id).at(-1)?.status).toBe(204);
    await expect(hooks.delivery(second.id).getByTestId('delivery-state')).toHaveText('succeeded', { timeout: 10_000 });

    // Paused and resumed.
    await hooks.act('pause');
    await expect(hooks.flash).toHaveText(`Paused the webhook to ${url}: its events wait for it until you resume it.`);
    await expect(page.getByTestId('paused-note')).toBeVisible();
    await expect(page.getByTestId('webhook-facts').getByTestId('webhook-state')).toHaveText('Paused');
    await hooks.act('resume');
    await expect(hooks.flash).toHaveText(`Resumed the webhook to ${url}: the events that waited for it go out now.`);
    await expect(page.getByTestId('webhook-facts').getByTestId('webhook-state')).toHaveText('Enabled');

    // Rotated, once asked: the new secret is shown once, and the old one
    // signs beside it for a day.
    expect(await hooks.act('rotate')).toContain('The current one keeps signing beside it for 1 day');
    await expect(page.getByRole('heading', { name: 'Its new signing secret' })).toBeVisible();
    const rotated = ((await hooks.secret.textContent()) ?? '').trim();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await expect(page.getByTestId('new-secret')).toContainText('The previous secret signs beside it until');

    // Removed, once asked.
    expect(await hooks.act('remove')).toBe(`Remove the webhook to ${url} and its deliveries, for good? Its receiver gets nothing more.`);
    await expect(page).toHaveURL(/\/webhooks$/);
    await expect(hooks.flash).toHaveText(`Removed the webhook to ${url}, and its deliveries.`);
    await expect(hooks.row(id)).toHaveCount(0);
  } finally {
    await receiver.close();
  }
});

test('a webhook whose receiver answered 410 Gone stands out, with what to do, and the navigation marks it until it is resumed', async ({
  openAs,
  jobs,
}) => {
  test.setTimeout(60_000);
  const receiver = new Receiver();
  receiver.status = 410;
  const url = await receiver.start('/gone');
  try {
    const page = await openAs('sam');
    const hooks = new WebhooksPage(page);
    await hooks.goto();
    await hooks.add(url, { queues: ['address-verification'], events: ['job.completed'] });
    const id = await hooks.openId();
    made.push(id);

    const carol = new OperatorApi((await openAs('carol')).request);
    const job = await jobs.create('address-verification', 'Verify address E2E-HOOK-GONE');
    const claim = await carol.claim('address-verification');
    expect(claim?.job.id, 'carol claims the job just made').toBe(job.id);
    await carol.complete(claim!);
    await expect.poll(() => receiver.received.length).toBe(1);

    // Any page's navigation marks it, within the few seconds an instance
    // takes to read the registry again.
    await expect
      .poll(
        async () => {
          await page.goto('/supervisor');
          return (await hooks.navMark.allTextContents()).join('');
        },
        { timeout: 10_000 },
      )
      .toBe('1 disabled');
    await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks 1 disabled' })).toBeVisible();

    await hooks.goto();
    const why = page.getByTestId(`disabled-${id}`);
    await expect(why).toContainText('Its receiver answered 410 Gone');
    await expect(why).toContainText('Fix the receiver, then resume the webhook');
    await expect(hooks.row(id).getByTestId('webhook-state')).toHaveText('Disabled: answered 410 Gone');
    for (const screen of SCREENS) {
      await page.setViewportSize(screen.viewport);
      await checkScreen(page, `a disabled webhook, on a ${screen.name}`, screen.name === 'phone');
    }

    await why.getByRole('link', { name: url }).click();
    await expect(page.getByTestId('disabled-why')).toContainText('answered 410 Gone');
    await hooks.act('resume');
    await expect(hooks.flash).toContainText(`Resumed the webhook to ${url}`);
    await expect(hooks.navMark).toHaveCount(0);
  } finally {
    await receiver.close();
  }
});

test('an internal address is refused at the URL field, as typed, and nothing is added', async ({ openAs }) => {
  const page = await openAs('sam');
  const hooks = new WebhooksPage(page);
  await hooks.goto();
  await hooks.add('http://10.0.0.1/', { queues: ['address-verification'] });
  const field = hooks.form.getByLabel('URL');
  await expect(hooks.problem('url')).toHaveText('10.0.0.1 is a private address: webhooks go only to public addresses.');
  await expect(field).toBeFocused();
  await expect(field).toHaveValue('http://10.0.0.1/');
  await expect(field).toHaveAttribute('aria-invalid', 'true');
  await expect(field).toHaveAccessibleDescription('10.0.0.1 is a private address: webhooks go only to public addresses.');
  await expect(hooks.form.getByLabel('address-verification', { exact: true })).toBeChecked();
  await expect(page.getByRole('link', { name: 'http://10.0.0.1/' })).toHaveCount(0);
  for (const screen of SCREENS) {
    await page.setViewportSize(screen.viewport);
    await checkScreen(page, `a refused webhook, on a ${screen.name}`, screen.name === 'phone');
  }
});

test('an operator cannot open the webhooks page, nor finds it in the navigation', async ({ openAs }) => {
  const alice = await openAs('alice');
  const res = await alice.goto('/webhooks');
  expect(res?.status()).toBe(403);
  await expect(alice.getByTestId('error-message')).toHaveText("You don't have access to this page.");
  await expect(alice.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: /Webhooks/ })).toHaveCount(0);
});
