import { readFileSync } from 'node:fs';
import { expect, test } from './fixtures';
import type { Page } from '@playwright/test';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { BASE_URL } from './constants';

// Every page at a phone's width and a laptop's: nothing runs off the side,
// every control is within the window (and big enough for a finger on the
// phone), the work page keeps its countdown and main action in view while
// the operator reads, and axe-core finds no serious or critical
// accessibility violation.

const SCREENS = [
  { name: 'phone', viewport: { width: 390, height: 844 } },
  { name: 'laptop', viewport: { width: 1366, height: 800 } },
] as const;

const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** Checks the page as it is now; what names it in failures. */
async function checkScreen(page: Page, what: string, phone: boolean) {
  const layout = await page.evaluate((phone) => {
    const width = document.documentElement.clientWidth;
    const controls = [...document.querySelectorAll<HTMLElement>('button, a[href], input:not([type=hidden]), select, textarea, summary')]
      .filter((el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden');
    const describe = (el: Element) => el.outerHTML.replace(/\s+/g, ' ').slice(0, 90);
    // On a laptop a table is a table: each body cell under its column's head.
    const misaligned = phone ? [] : [...document.querySelectorAll('table')].filter((t) => {
      const head = t.tHead?.rows[t.tHead.rows.length - 1], row = t.tBodies[0]?.rows[0];
      if (!head || !row) return false;
      const last = row.cells[row.cells.length - 1], lastHead = head.cells[head.cells.length - 1];
      return getComputedStyle(t).display !== 'table' ||
        Math.abs(last.getBoundingClientRect().right - lastHead.getBoundingClientRect().right) > 2;
    }).map((t) => t.dataset.testid ?? 'a table');
    const overflow = document.documentElement.scrollWidth - width;
    return {
      misaligned,
      overflow,
      // What runs past the right edge, deepest first: named when it fails.
      wide: overflow <= 0 ? [] : (() => {
        const found: string[] = [];
        const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        for (let n = walk.nextNode(); n && found.length < 3; n = walk.nextNode()) {
          const range = document.createRange();
          range.selectNodeContents(n);
          if (range.getBoundingClientRect().right > width + 1) found.push(describe(n.parentElement!));
        }
        return found;
      })(),
      offside: controls.filter((el) => { const r = el.getBoundingClientRect(); return r.left < -1 || r.right > width + 1; }).map(describe),
      // Links inside running text are exempt (WCAG 2.5.8): only controls of their own.
      small: phone
        ? controls.filter((el) => !(el.tagName === 'A' && el.closest('p:not(.crumbs), li, dd, td:not(.lead), figcaption, .problem, .flash, .warning')) && el.tagName !== 'SUMMARY' && !(el instanceof HTMLInputElement && el.type === 'checkbox'))
            .filter((el) => el.getBoundingClientRect().height < 43.5).map(describe)
        : [],
    };
  }, phone);
  expect(layout.misaligned, `${what}: tables whose cells are not under their heads`).toEqual([]);
  expect(layout.overflow, `${what}: sideways overflow, from ${layout.wide.join(' | ')}`).toBeLessThanOrEqual(0);
  expect(layout.offside, `${what}: controls outside the window`).toEqual([]);
  expect(layout.small, `${what}: controls under 44 px high on a phone`).toEqual([]);

  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const result = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return result.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      .map((v: any) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')).join(' | ')}`);
  });
  expect(violations, `${what}: axe-core`).toEqual([]);
}

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
          gross_amount: 3156.5,
          scan_url: 'https://files.example.com/scans/INV-E2E.pdf',
          lines: Array.from({ length: 12 }, (_, i) => ({ sku: `SKU-${i}`, qty: i + 1, note: 'x'.repeat(40) })),
        },
      });
      expect(await home.claimNextIn('invoice-review')).toBe(`/jobs/${job.id}`);
      await checkScreen(alice, 'work page', phone);
      // The details read as words and numbers, and only the address is a link.
      const details = alice.getByTestId('payload').first();
      await expect(details).toContainText('Gross amount');
      await expect(details).toContainText('3,156.5');
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

    test('the supervisor pages', async ({ openAs }) => {
      const sam = await openAs('sam', 'A', { viewport: screen.viewport });
      for (const path of [
        '/supervisor', '/supervisor/queues/invoice-review', '/supervisor/queues/invoice-review?state=dead',
        '/supervisor/queues/invoice-review?state=completed', '/supervisor/queues/new', '/supervisor/batches',
        '/supervisor/team', '/supervisor/people', '/supervisor/people/alice', '/supervisor/audit', '/supervisor/no-such-page',
      ]) {
        await sam.goto(path);
        await checkScreen(sam, path, phone);
      }
      // The page shown is marked in the navigation; the first Tab reaches
      // a link past the header, to the page itself.
      await sam.goto('/supervisor/team');
      await expect(sam.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Team' })).toHaveAttribute('aria-current', 'page');
      await sam.keyboard.press('Tab');
      const skip = sam.getByRole('link', { name: 'Skip to the page' });
      await expect(skip).toBeFocused();
      await expect(skip).toBeInViewport();
      await skip.press('Enter');
      await expect(sam).toHaveURL(/#main$/);
    });

    test('the login page', async ({ browser }) => {
      const context = await browser.newContext({ viewport: screen.viewport, baseURL: BASE_URL });
      const page = await context.newPage();
      await page.goto('/login');
      await checkScreen(page, 'login', phone);
      await context.close();
    });
  });
}
