import type { Page } from '@playwright/test';

// What a page did, read from inside it: the tests ask the page itself, after
// whatever it was doing has run to its end, instead of waiting a while for
// something not to happen.

/**
 * Records the requests htmx makes from now on (the page's forms sent in
 * place, its fragments fetched), and returns what reads them: the paths,
 * in order. The page is asked after the task it was in (a key pressed, a
 * question answered, a timer) has run to its end. With fromStart, call it
 * before the page loads (before goto): it records from the page's start.
 */
export async function recordRequests(page: Page, { fromStart = false } = {}): Promise<() => Promise<string[]>> {
  const record = () => {
    const w = window as unknown as { __sent: string[] };
    w.__sent = [];
    document.addEventListener('htmx:beforeRequest', (e) => {
      w.__sent.push((e as CustomEvent<{ requestConfig: { path: string } }>).detail.requestConfig.path);
    });
  };
  if (fromStart) await page.addInitScript(record);
  else await page.evaluate(record);
  return () => page.evaluate(() => (window as unknown as { __sent: string[] }).__sent);
}

/**
 * Has the page count the notices of a type it has handled: its own
 * handler runs first, then the count goes up. Call it before the page
 * opens its socket (before goto); the returned function reads the count.
 */
export async function countHandled(page: Page, type: string): Promise<() => Promise<number>> {
  await page.addInitScript((noticeType) => {
    const w = window as unknown as { __handled: number };
    w.__handled = 0;
    const Real = window.WebSocket;
    window.WebSocket = class extends Real {
      constructor(url: string | URL, protocols?: string | string[]) {
        super(url, protocols);
        // Added once the page has set its own onmessage: heard after it.
        queueMicrotask(() => this.addEventListener('message', (e) => {
          if (String(e.data).includes(`"type":"${noticeType}"`)) w.__handled += 1;
        }));
      }
    };
  }, type);
  return () => page.evaluate(() => (window as unknown as { __handled: number }).__handled);
}
