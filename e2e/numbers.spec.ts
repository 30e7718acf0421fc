import type { Page } from '@playwright/test';
import { OperatorApi } from './api';
import { expect, test, uniqueTitle } from './fixtures';
import { LiveUpdates } from './pages/LiveUpdates';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { QueueNumbers } from './pages/QueueNumbers';

// The numbers say what they count: a queue's tabs and charts agree and
// change together, the charts say each quarter hour's time and value to a
// pointer and to the keyboard, dead jobs are red only where some died
// today, and the operator's card names the oldest wait as such.
//
// content-moderation is granted to bob and carol among the operators;
// helpdesk-bot produces into it.

const QUEUE = 'content-moderation';

test.describe('numbers', () => {
  test('a queue\'s ready tab and Ready chart show one count, and change together when a job comes', async ({ openAs, jobs }) => {
    const sam = await openAs('sam');
    const n = new QueueNumbers(sam);
    await sam.goto(`/supervisor/queues/${QUEUE}`);
    const ready = Number(await n.tabCount('ready').textContent());
    await expect(n.total('Ready')).toHaveText(`${ready} now`);

    // Someone reading the Claims chart by keyboard keeps their place
    // while the numbers are fetched again.
    const claims = n.chart('Claims');
    await claims.focus();
    await sam.keyboard.press('ArrowLeft');
    await sam.keyboard.press('ArrowLeft');
    await expect(claims).toHaveAttribute('aria-valuenow', '93');

    await jobs.create(QUEUE, 'Reported comment: counted once, shown twice', { priority: 0 });
    await expect(n.tabCount('ready')).toHaveText(String(ready + 1));
    await expect(n.total('Ready')).toHaveText(`${ready + 1} now`);
    await expect(claims).toBeFocused();
    await expect(claims).toHaveAttribute('aria-valuenow', '93');
    await expect(n.readout('Claims')).toHaveText(/^\d{1,2}:\d{2}\D*–\d{1,2}:\d{2}\D*: \d+ claims?$/);
    // The chart's quarter hour under way is that same count.
    await n.chart('Ready').focus();
    await expect(n.readout('Ready')).toHaveText(new RegExp(`–now: ${ready + 1} ready$`));
  });

  test('a chart says the time and value of the quarter hour under the pointer, or chosen with the keys', async ({ openAs }) => {
    const sam = await openAs('sam');
    const n = new QueueNumbers(sam);
    await sam.goto(`/supervisor/queues/${QUEUE}`);
    const claims = n.chart('Claims');
    await expect(n.figure('Claims').locator('time')).toHaveCount(2);
    await expect(n.figure('Claims')).toContainText('now');
    await expect(n.readout('Claims')).toHaveText(/^peak \d+$/);

    // The pointer over the chart's first quarter of the day.
    await claims.hover({ position: { x: 30, y: 10 } });
    await expect(n.readout('Claims')).toHaveText(/^\d{1,2}:\d{2}\D*–\d{1,2}:\d{2}\D*: \d+ claims?$/);
    await sam.mouse.move(0, 0);
    await expect(n.readout('Claims')).toHaveText(/^peak \d+$/);

    // By keyboard: the chart takes the focus, starts at now, and the arrow
    // keys move by a quarter hour; a screen reader hears the same words.
    await claims.focus();
    await expect(n.readout('Claims')).toHaveText(/–now: \d+ claims?$/);
    await expect(claims).toHaveAttribute('aria-valuenow', '95');
    await sam.keyboard.press('ArrowLeft');
    await expect(claims).toHaveAttribute('aria-valuenow', '94');
    const said = await n.readout('Claims').textContent();
    expect(said).toMatch(/^\d{1,2}:\d{2}\D*–\d{1,2}:\d{2}\D*: \d+ claims?$/);
    await expect(claims).toHaveAttribute('aria-valuetext', said ?? '');
    await sam.keyboard.press('Home');
    await expect(claims).toHaveAttribute('aria-valuenow', '0');
    await sam.keyboard.press('Tab');
    await expect(n.readout('Claims')).toHaveText(/^peak \d+$/);
  });

  // A job comes while the pointer is over the Claims chart; the page
  // fetches its numbers again, and the chart under the pointer is a new
  // element, which says the same quarter hour. Then the pointer leaves it,
  // onto the page or out of the window.
  for (const [way, leave] of [
    ['onto the page', (page: Page) => page.mouse.move(0, 0)],
    ['out of the window', (page: Page) => page.mouse.move(-20, -20)],
  ] as const) {
    test(`a chart fetched again while the pointer is over it goes on saying that quarter hour, and lets go when the pointer leaves ${way}`, async ({ openAs, jobs }) => {
      const sam = await openAs('sam');
      const n = new QueueNumbers(sam);
      await sam.goto(`/supervisor/queues/${QUEUE}`);
      await new LiveUpdates(sam).waitUntilLive();
      const claims = n.chart('Claims');
      const quarter = /^\d{1,2}:\d{2}\D*–\d{1,2}:\d{2}\D*: \d+ claims?$/;
      await claims.hover({ position: { x: 30, y: 10 } });
      await expect(n.readout('Claims')).toHaveText(quarter);
      const at = await claims.getAttribute('aria-valuenow');
      await claims.evaluate((chart) => { chart.dataset.fetched = 'before'; });
      await jobs.create(QUEUE, `Reported comment: counted under the pointer, then ${way}`, { priority: 0 });
      await expect(claims).not.toHaveAttribute('data-fetched', 'before');
      await expect(claims).toHaveAttribute('aria-valuenow', at ?? '');
      await expect(n.readout('Claims')).toHaveText(quarter);

      await leave(sam);
      await expect(n.readout('Claims')).toHaveText(/^peak \d+$/);
    });
  }

  test('a queue where nothing died today shows it in neutral', async ({ openAs }, info) => {
    const sam = await openAs('sam');
    const n = new QueueNumbers(sam);
    const fresh = `e2e-n${uniqueTitle('', info).replace(/[^a-z0-9]/g, '').slice(-10)}`;
    await sam.goto('/supervisor/queues/new');
    await sam.getByLabel('Name').fill(fresh);
    await sam.getByRole('button', { name: 'Create queue' }).click();
    await expect(sam.getByTestId('flash')).toContainText(`Created queue ${fresh}`);
    await expect(n.tabCount('dead')).toHaveText('0');
    await expect(n.deadTodayTab()).toHaveCount(0);
    await sam.goto('/supervisor');
    await expect(n.deadTodayCell(fresh)).toHaveText('0');
    await expect(n.deadTodayCell(fresh).locator('.bad')).toHaveCount(0);
  });

  test('a job that dies makes its queue\'s dead today red; the total of them stays, neutral', async ({ openAs, jobs }) => {
    // One dies in content-moderation while the overview is open: red there,
    // and the total one more, in the colour of the other counts.
    const sam = await openAs('sam');
    const n = new QueueNumbers(sam);
    await sam.goto('/supervisor');
    const today = Number(await n.deadTodayCell(QUEUE).textContent());
    const dead = Number(await n.deadCell(QUEUE).textContent());
    const job = await jobs.create(QUEUE, 'Reported comment: cannot be judged', { max_attempts: 1, priority: 100 });
    const carol = new OperatorApi((await openAs('carol')).request);
    const claim = await carol.claim(QUEUE);
    expect(claim?.job.id).toBe(job.id);
    if (claim) await carol.fail(claim, 'The thread is gone.');
    await expect(n.deadTodayCell(QUEUE)).toHaveText(String(today + 1));
    await expect(n.deadCell(QUEUE)).toHaveText(String(dead + 1));
    const colour = (el: Element) => getComputedStyle(el).color;
    const red = await n.deadTodayCell(QUEUE).locator('a.bad').evaluate(colour);
    expect(await n.deadCell(QUEUE).evaluate(colour)).not.toBe(red);

    await sam.goto(`/supervisor/queues/${QUEUE}`);
    await expect(n.tabCount('dead')).toHaveText(String(dead + 1));
    await expect(n.deadTodayTab()).toHaveText(`${today + 1} today`);
  });

  test('a queue\'s page on a phone folds its charts, so its jobs come first', async ({ openAs }) => {
    const sam = await openAs('sam', 'A', { viewport: { width: 390, height: 844 } });
    const n = new QueueNumbers(sam);
    await sam.goto(`/supervisor/queues/${QUEUE}`);
    await expect(n.figure('Claims')).toBeHidden();
    // Below the tabs, the folded charts and the filter: the list starts
    // within the first screen and a quarter, not two screens down.
    const jobs = await sam.getByTestId('jobs').boundingBox();
    expect(jobs?.y).toBeLessThan(844 * 1.25);
    await sam.getByText('The last 24 hours').click();
    await expect(n.figure('Claims')).toBeVisible();
  });

  test('an operator\'s queue card names the oldest wait', async ({ openAs, jobs }) => {
    await jobs.create(QUEUE, 'Reported comment: waiting its turn', { priority: 0 });
    const home = new OperatorHomePage(await openAs('bob'));
    await home.goto();
    await expect(home.page.getByTestId(`queue-${QUEUE}`).getByTestId('oldest-waiting')).toHaveText(/^Oldest waiting (under a minute|\d+ min|\d+ h \d+ min|\d+ days)$/);
  });
});
