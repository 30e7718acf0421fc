import { readFileSync } from 'node:fs';
import { expect } from './fixtures';
import type { Page } from '@playwright/test';

// How a page is checked as its users meet it, at a phone's width and a
// laptop's (screens.spec.ts checks every page; other specs check the
// states they bring about).

export const SCREENS = [
  { name: 'phone', viewport: { width: 390, height: 844 } },
  { name: 'laptop', viewport: { width: 1366, height: 800 } },
] as const;

const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** Checks the page as it is now; what names it in failures. */
export async function checkScreen(page: Page, what: string, phone: boolean) {
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
        ? controls.filter((el) => !(el.tagName === 'A' && el.closest('p:not(.crumbs), li, dd, td:not(.lead), figcaption, .problem, .flash, .warning')) && el.tagName !== 'SUMMARY' && !(el instanceof HTMLInputElement && (el.type === 'checkbox' || el.type === 'radio')))
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
