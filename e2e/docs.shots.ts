import path from 'node:path';
import type { Page } from '@playwright/test';
import { OperatorApi } from './api';
import { expect, test } from './fixtures';
import { WebhooksPage } from './pages/WebhooksPage';
import { Receiver } from './receiver';

// Takes docs/screens/<page>-<width>.png of every page from the demo data:
// what the README shows. Run by `make screenshots`, not by `make test`.

const OUT = path.join(__dirname, '..', 'docs', 'screens');
const WIDTHS = [
  { width: 1366, height: 800 },
  { width: 390, height: 844 },
];

async function shoot(page: Page, name: string) {
  await page.waitForLoadState('networkidle');
  // The script has shown every time in the viewer's zone: it gives each
  // the server's UTC as its title.
  await expect(page.locator('time[datetime]:not([data-date-only]):not([title])')).toHaveCount(0);
  await page.screenshot({ path: path.join(OUT, `${name}-${page.viewportSize()!.width}.png`) });
}

for (const viewport of WIDTHS) {
  test.describe(`at ${viewport.width} px`, () => {
    test('the operator pages', async ({ openAs }) => {
      const alice = await openAs('alice', 'A', { viewport, locale: 'en-US', timezoneId: 'Europe/Zurich' });
      await alice.goto('/');
      await shoot(alice, 'home');
      await alice.getByRole('button', { name: 'Claim next from invoice-review', exact: true }).click();
      await expect(alice).toHaveURL(/\/jobs\//);
      await shoot(alice, 'work');
      // The invoice's payload: its lines a table, its sums money.
      await alice.getByTestId('payload-table').first().scrollIntoViewIfNeeded();
      await shoot(alice, 'work-payload');
      await alice.getByTestId('release').click();

      const bob = await openAs('bob', 'A', { viewport, locale: 'en-US', timezoneId: 'Europe/Zurich' });
      await bob.goto('/');
      await bob.getByRole('button', { name: 'Claim next from support-escalations', exact: true }).click();
      await expect(bob).toHaveURL(/\/jobs\//);
      await bob.getByTestId('to-finish').click();
      await bob.getByRole('radio', { name: 'Refund' }).check();
      await bob.getByTestId('complete').click();
      await expect(bob.getByTestId('problem-category')).toBeVisible();
      await bob.getByRole('group', { name: /Decision/ }).scrollIntoViewIfNeeded();
      await shoot(bob, 'outcome-form');
      await bob.getByTestId('release').click();
    });

    test('the supervisor pages', async ({ openAs }) => {
      const sam = await openAs('sam', 'A', { viewport, locale: 'en-US', timezoneId: 'Europe/Zurich' });
      for (const [name, where] of [
        ['supervise', '/supervisor'],
        ['queue', '/supervisor/queues/invoice-review'],
        ['dead', '/supervisor/queues/content-moderation?state=dead'],
        ['batches', '/supervisor/batches'],
        ['team', '/supervisor/team'],
        ['people', '/supervisor/people'],
        ['audit', '/supervisor/audit'],
        ['at-risk', '/supervisor/queues/support-escalations?sla=at_risk'],
      ]) {
        await sam.goto(where);
        await shoot(sam, name);
      }
      // A queue's finished work: the filters, then who, when and what
      // each came to; and a range with none.
      await sam.goto('/supervisor/queues/invoice-review?state=completed');
      await sam.getByTestId('job-filter').evaluate((el) => el.scrollIntoView());
      await shoot(sam, 'queue-completed');
      await sam.goto('/supervisor/queues/invoice-review?state=completed&from=2001-01-01T00%3A00&to=2001-01-02T00%3A00');
      await sam.getByTestId('no-jobs').scrollIntoViewIfNeeded();
      await shoot(sam, 'queue-none');
      // A queue's due-time settings.
      await sam.goto('/supervisor/queues/support-escalations');
      await sam.getByTestId('due-settings').scrollIntoViewIfNeeded();
      await shoot(sam, 'due-settings');
      // The queue's settings with its outcome form in the editor.
      await sam.goto('/supervisor/queues/invoice-review');
      await sam.getByTestId('outcome-editor').scrollIntoViewIfNeeded();
      await shoot(sam, 'outcome-editor');
      // Dead jobs ticked, and the box that asks why they are requeued.
      await sam.goto('/supervisor/queues/content-moderation?state=dead');
      await sam.getByRole('checkbox', { name: /^Select / }).first().check();
      await sam.getByTestId('requeue-selected').click();
      const box = sam.getByTestId('reason-dialog');
      await expect(box).toBeVisible();
      await shoot(sam, 'reason');
      await box.getByRole('button', { name: 'Back' }).click();
      await expect(box).toBeHidden();
      await sam.emulateMedia({ colorScheme: 'dark' });
      await sam.goto('/supervisor');
      await shoot(sam, 'supervise-dark');
    });
  });
}

// The webhooks, after every other page (so that those show no job this
// completes): one just added, its secret shown once; one whose receiver
// answered 410 Gone, disabled; a delivered job; a refused URL.
test('the webhooks pages', async ({ openAs, api }) => {
  test.setTimeout(120_000);
  for (const viewport of WIDTHS) {
    const receiver = new Receiver();
    const gone = new Receiver();
    gone.status = 410;
    const url = await receiver.start('/claimdesk/events');
    const goneUrl = await gone.start('/hooks/claimdesk');
    const sam = await openAs('sam', 'A', { viewport, locale: 'en-US', timezoneId: 'Europe/Zurich' });
    const hooks = new WebhooksPage(sam);
    const made: string[] = [];
    try {
      await hooks.goto();
      await hooks.add(goneUrl, { queues: ['invoice-review'], events: ['job.completed'] });
      made.push(await hooks.openId());
      await hooks.goto();
      await hooks.add(url, { queues: ['invoice-review'], events: ['job.completed', 'job.dead'] });
      const id = await hooks.openId();
      made.push(id);
      receiver.secrets = [((await hooks.secret.textContent()) ?? '').trim()];
      await shoot(sam, 'webhook-secret');

      const alice = new OperatorApi((await openAs('alice')).request);
      const job = await api.enqueue('invoice-review', {
        title: 'Check invoice INV-2026-0611 from Alpenblick Catering AG (CHF 3,156.50)',
        priority: 100,
      });
      const claim = await alice.claim('invoice-review');
      expect(claim?.job.id).toBe(job.id);
      await alice.complete(claim!);
      await expect.poll(() => receiver.received.length + gone.received.length).toBe(2);
      await expect
        .poll(
          async () => {
            await hooks.goto();
            return hooks.navMark.count();
          },
          { timeout: 10_000 },
        )
        .toBe(1);
      await shoot(sam, 'webhooks');

      await sam.goto(`/webhooks/${id}`);
      await expect(hooks.delivery(receiver.received[0].id).getByTestId('delivery-state')).toHaveText('succeeded');
      await shoot(sam, 'webhook');

      await hooks.goto();
      await hooks.add('http://10.0.0.1/hooks', { queues: ['invoice-review'] });
      await expect(hooks.problem('url')).toBeVisible();
      await shoot(sam, 'webhook-refused');
    } finally {
      for (const hook of made) {
        await sam.goto(`/webhooks/${hook}`);
        await hooks.act('remove');
        await expect(hooks.flash).toContainText('Removed the webhook');
      }
      await receiver.close();
      await gone.close();
    }
  }
});
