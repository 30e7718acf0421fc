import { expect, test } from './fixtures';
import type { Page } from '@playwright/test';
import { checkScreen, SCREENS } from './screen';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { BASE_URL } from './constants';

// Every page at a phone's width and a laptop's: nothing runs off the side,
// every control is within the window (and big enough for a finger on the
// phone), the work page keeps its countdown and main action in view while
// the operator reads, and axe-core finds no serious or critical
// accessibility violation.

for (const screen of SCREENS) {
  const phone = screen.name === 'phone';
  test.describe(`on a ${screen.name}`, () => {
    test('the operator pages: home, work, a job done', async ({ openAs, jobs }) => {
      const alice = await openAs('alice', 'A', { viewport: screen.viewport, locale: 'en-US' });
      const home = new OperatorHomePage(alice);
      await home.goto();
      await checkScreen(alice, 'home', phone);

      const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-SCREENS', {
        payload: {
          vendor: { name: 'Alpenblick Catering AG', country: 'CH' },
          currency: 'CHF',
          gross_amount: 3156.5,
          vat_rate: 0.081,
          due: '2026-12-12',
          scan_url: 'https://files.example.com/scans/INV-E2E.pdf',
          lines: Array.from({ length: 12 }, (_, i) => ({ sku: `SKU-${i}`, qty: i + 1, note: 'x'.repeat(40) })),
        },
      });
      expect(await home.claimNextIn('invoice-review')).toBe(`/jobs/${job.id}`);
      await checkScreen(alice, 'work page', phone);
      // The details read as words and numbers, and only the address is a link.
      const details = alice.getByTestId('payload').first();
      // Money in its currency, a rate as a number, a date as a date.
      await expect(details).toContainText('Gross amount');
      await expect(details).toContainText('CHF 3,156.50');
      await expect(details).toContainText('8.1%');
      await expect(details).toContainText('Dec 12, 2026');
      const scan = details.getByRole('link', { name: 'https://files.example.com/scans/INV-E2E.pdf' });
      await expect(scan).toHaveAttribute('rel', 'noopener noreferrer');
      await expect(details.getByRole('link')).toHaveCount(1);
      // Halfway down the details, the time left and the main action are in view.
      await alice.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight / 2));
      for (const id of ['countdown', 'bar-complete-next']) {
        await expect(alice.getByTestId(id), `${id} mid-scroll`).toBeInViewport();
      }
      await alice.getByTestId('bar-complete-next').click();
      await expect(alice).not.toHaveURL(new RegExp(`/jobs/${job.id}$`));
      await alice.goto(`/jobs/${job.id}`);
      await checkScreen(alice, 'a job done', phone);
    });

    // One test per page: each is a page load and axe's check, and no page
    // waits on a timer of claimdesk's.
    for (const path of [
      '/supervisor', '/supervisor/queues/invoice-review', '/supervisor/queues/invoice-review?state=dead',
      '/supervisor/queues/invoice-review?state=completed', '/supervisor/queues/new', '/supervisor/batches',
      '/supervisor/team', '/supervisor/people', '/supervisor/people/alice', '/supervisor/audit', '/webhooks', '/supervisor/no-such-page',
    ]) {
      test(`the supervisor page ${path}`, async ({ openAs }) => {
        const sam = await openAs('sam', 'A', { viewport: screen.viewport });
        await sam.goto(path);
        await checkScreen(sam, path, phone);
      });
    }

    test('the page shown is marked in the navigation; the first Tab reaches a link past the header', async ({ openAs }) => {
      const sam = await openAs('sam', 'A', { viewport: screen.viewport });
      await sam.goto('/supervisor/team');
      await expect(sam.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' })).toHaveAttribute('aria-current', 'page');
      await sam.keyboard.press('Tab');
      const skip = sam.getByRole('link', { name: 'Skip to the page' });
      await expect(skip).toBeFocused();
      await expect(skip).toBeInViewport();
      await skip.press('Enter');
      await expect(sam).toHaveURL(/#main$/);
    });

    test('in the dark theme: home', async ({ openAs }) => {
      const alice = await openAs('alice', 'A', { viewport: screen.viewport });
      await alice.emulateMedia({ colorScheme: 'dark' });
      await alice.goto('/');
      await checkScreen(alice, 'home, dark', phone);
    });

    for (const path of ['/supervisor', '/supervisor/team']) {
      test(`in the dark theme: ${path}`, async ({ openAs }) => {
        const sam = await openAs('sam', 'A', { viewport: screen.viewport });
        await sam.emulateMedia({ colorScheme: 'dark' });
        await sam.goto(path);
        await checkScreen(sam, `${path}, dark`, phone);
      });
    }

    test('the login page', async ({ browser }) => {
      const context = await browser.newContext({ viewport: screen.viewport, baseURL: BASE_URL });
      const page = await context.newPage();
      await page.goto('/login');
      await checkScreen(page, 'login', phone);
      await context.close();
    });
  });
}
