import path from 'node:path';
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures';

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
      ]) {
        await sam.goto(where);
        await shoot(sam, name);
      }
      await sam.emulateMedia({ colorScheme: 'dark' });
      await sam.goto('/supervisor');
      await shoot(sam, 'supervise-dark');
    });
  });
}
