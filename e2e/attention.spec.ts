import { expect, test } from './fixtures';
import { checkScreen } from './screen';
import { PEOPLE } from './constants';
import { recordRequests } from './sends';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { WorkPage } from './pages/WorkPage';

// Keyboard and attention: the work page's shortcuts, listed under ?, can
// be turned off (WCAG 2.1.4); the tab's title says how much work waits;
// a toast stays while the pointer is on it.

test.describe('keyboard and attention', () => {
  test('the work page has shortcuts, listed under ?, and single-key shortcuts can be turned off', async ({ openAs, jobs, api }) => {
    const alice = await openAs('alice');
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-KEYS');
    const home = new OperatorHomePage(alice);
    const work = new WorkPage(alice);
    await home.goto();
    await home.claimNextIn('invoice-review');
    expect(await work.waitForJob()).toBe(job.id);

    // The buttons say their keys, to the eye and to assistive technology.
    await expect(work.releaseButton).toHaveAttribute('aria-keyshortcuts', 'g');
    await expect(work.releaseButton.locator('kbd')).toBeVisible();
    await alice.keyboard.press('?');
    const box = alice.getByTestId('settings');
    await expect(box).toBeVisible();
    // Each key, then what it does: in the page's order, after the box's own.
    await expect(box.getByRole('term')).toHaveText(['?', 'n', 'd', 'm', 'g', 's', 'f']);
    await expect(box.getByRole('definition')).toHaveText(['This box', 'Complete & next', 'Complete', 'More time', 'Give back', 'Skip (not for me)', "Can't be done…"]);
    await checkScreen(alice, 'the settings box', false);

    // Turned off: the keys do nothing, and the buttons no longer show them.
    await box.getByLabel(/Single-key shortcuts/).uncheck();
    await box.getByRole('button', { name: 'Done' }).click();
    await expect(box).toBeHidden();
    await expect(work.releaseButton.locator('kbd')).toBeHidden();
    const sent = await recordRequests(alice);
    await alice.keyboard.press('g');
    expect(await sent()).toEqual([]);
    expect(work.jobId()).toBe(job.id);
    expect((await api.get(job)).state).toBe('reserved');
    // The setting is kept in this browser: still off on the next page.
    await alice.reload();
    await alice.keyboard.press('?');
    await expect(box).toBeHidden();

    // On again, from the footer's button: g gives the job back.
    await alice.getByTestId('open-settings').click();
    await box.getByLabel(/Single-key shortcuts/).check();
    await alice.keyboard.press('Escape');
    await alice.keyboard.press('g');
    await expect(alice.getByTestId('flash')).toContainText('Given back');
    expect((await api.get(job)).state).toBe('ready');
  });

  test('leaving a job with something typed for it asks first, by key or by button', async ({ openAs, jobs, api }) => {
    const alice = await openAs('alice');
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-TYPED');
    const home = new OperatorHomePage(alice);
    const work = new WorkPage(alice);
    await home.goto();
    await home.claimNextIn('invoice-review');
    expect(await work.waitForJob()).toBe(job.id);
    await work.notes.fill('Half way through the check');
    await work.releaseButton.focus();

    // g, answered No: nothing is sent, the notes stay.
    const asked: string[] = [];
    const sent = await recordRequests(alice);
    alice.once('dialog', (d) => { asked.push(d.message()); void d.dismiss(); });
    await alice.keyboard.press('g');
    await expect.poll(() => asked.length).toBe(1);
    expect(asked[0]).toContain('Give back? What you typed for this job');
    expect(await sent()).toEqual([]);
    expect(work.jobId()).toBe(job.id);
    await expect(work.notes).toHaveValue('Half way through the check');
    expect((await api.get(job)).state).toBe('reserved');

    // Skip, answered Yes: it goes.
    alice.once('dialog', (d) => { asked.push(d.message()); void d.accept(); });
    await work.skipButton.click();
    await expect(alice.getByTestId('flash')).toBeVisible();
    expect(asked[1]).toContain('Skip (not for me)? What you typed');
    expect((await api.get(job)).state).toBe('ready');
    // Skip opened the next job, if one was waiting: give it back.
    if (new URL(alice.url()).pathname.startsWith('/jobs/')) {
      await work.release();
      await expect(alice.getByTestId('flash')).toContainText('Given back');
    }
  });

  test('a job left untouched goes without a question, though its form has a list; a choice made in the list asks first', async ({ openAs, jobs, api }) => {
    const alice = await openAs('alice');
    const home = new OperatorHomePage(alice);
    const work = new WorkPage(alice);
    await home.goto();
    await home.live.waitUntilLive();
    // support-escalations ages priorities: its toast claims this very job.
    const job = await jobs.create('support-escalations', 'Escalation E2E-UNTOUCHED');
    await home.claimFromToast(job.title);
    expect(await work.waitForJob()).toBe(job.id);
    const category = alice.getByLabel(/Category/);
    await expect(category).toHaveValue('');
    const asked: string[] = [];
    alice.on('dialog', (d) => { asked.push(d.message()); void d.dismiss(); });

    // A category chosen is something typed: Give back asks (No: it stays).
    await category.selectOption({ index: 1 });
    const sent = await recordRequests(alice);
    await work.releaseButton.click();
    await expect.poll(() => asked.length).toBe(1);
    expect(await sent()).toEqual([]);
    expect((await api.get(job)).state).toBe('reserved');

    // Back to "Choose…", as the page came: it goes without a question.
    await category.selectOption({ index: 0 });
    await work.releaseButton.click();
    await expect(alice.getByTestId('flash')).toContainText('Given back');
    expect(asked).toHaveLength(1);
    expect((await api.get(job)).state).toBe('ready');
  });

  test('the tab title counts the jobs waiting; a toast stays while the pointer is on it', async ({ openAs, jobs }) => {
    const alice = await openAs('alice');
    // The page's clock is the test's: a toast's 10 s pass when it says so.
    await alice.clock.install();
    const home = new OperatorHomePage(alice);
    await home.goto();
    await home.live.waitUntilLive();
    let waiting = 0;
    for (const queue of PEOPLE.alice.queues) waiting += await home.readyCountNow(queue);
    await expect(alice).toHaveTitle(`(${waiting}) My work · claimdesk`);

    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-TOAST');
    await expect(alice).toHaveTitle(`(${waiting + 1}) My work · claimdesk`);
    const toast = home.toastFor(job.title);
    await expect(toast).toBeVisible();
    await checkScreen(alice, 'home with a toast', false);
    // Its 10 s pass, and it looks again every 2 s: it stays while pointed at.
    await toast.hover();
    await alice.clock.runFor(13_000);
    await expect(toast).toBeVisible();
    // The pointer gone, it goes at the next look.
    await alice.mouse.move(0, 0);
    await alice.clock.runFor(1_000);
    await expect(toast).toBeHidden();
  });

  test('new work while the tab is hidden: a tone or a browser notification, as chosen in the settings box', async ({ openAs, jobs }) => {
    const alice = await openAs('alice');
    // The tab is in the background; the page's sounds and notifications
    // are counted where they would reach the person.
    await alice.addInitScript(() => {
      Object.defineProperty(document, 'hidden', { get: () => true });
      const w = window as unknown as Record<string, unknown>;
      w.__tones = 0;
      w.__notes = [] as string[];
      const Real = window.AudioContext;
      w.AudioContext = class extends Real {
        createOscillator() { (w.__tones as number)++; return super.createOscillator(); }
      };
      w.Notification = class {
        static permission = 'granted';
        static requestPermission() { return Promise.resolve('granted'); }
        onclick: (() => void) | null = null;
        constructor(title: string) { (w.__notes as string[]).push(title); }
        close() {}
      };
    });
    const home = new OperatorHomePage(alice);
    await home.goto();
    await home.live.waitUntilLive();
    const count = (what: string) => alice.evaluate((k) => (window as unknown as Record<string, number | string[]>)[k], what);

    // By default: nothing. (The toast says the notice came: whatever it
    // set off has run.)
    const quiet = await jobs.create('invoice-review', 'Check invoice INV-E2E-QUIET');
    await expect(home.toastFor(quiet.title)).toBeVisible();
    expect(await count('__tones')).toBe(0);
    expect(await count('__notes')).toEqual([]);

    await alice.getByTestId('open-settings').click();
    const box = alice.getByTestId('settings');
    await box.getByLabel('A browser notification').check();
    await box.getByRole('button', { name: 'Done' }).click();
    await jobs.create('invoice-review', 'Check invoice INV-E2E-NOTIFY');
    await expect.poll(() => count('__notes')).toEqual(['New job in invoice-review']);

    // A tone instead, kept across pages; at most one in 10 s.
    await alice.getByTestId('open-settings').click();
    await box.getByLabel('A short sound').check();
    await box.getByRole('button', { name: 'Done' }).click();
    await alice.reload();
    await home.live.waitUntilLive();
    await jobs.create('invoice-review', 'Check invoice INV-E2E-TONE');
    await expect.poll(() => count('__tones')).toBe(1);
    const again = await jobs.create('invoice-review', 'Check invoice INV-E2E-TONE-AGAIN');
    await expect(home.toastFor(again.title)).toBeVisible();
    expect(await count('__tones')).toBe(1);
    expect(await count('__notes')).toEqual([]);
  });

  test('an action answered in place that fails unexpectedly shows the error page\'s words in place of the page', async ({ openAs, jobs, api }) => {
    const alice = await openAs('alice');
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-FAILED-IN-PLACE');
    const home = new OperatorHomePage(alice);
    const work = new WorkPage(alice);
    await home.goto();
    await home.claimNextIn('invoice-review');
    expect(await work.waitForJob()).toBe(job.id);
    // The server's answer to Give back is lost to a failing proxy.
    await alice.route(`**/jobs/${job.id}/release`, (route) => route.fulfill({
      status: 502, contentType: 'text/html',
      body: '<!DOCTYPE html><title>Bad gateway</title><main id="main"><h1>Bad gateway</h1><p>The proxy could not reach claimdesk.</p></main>',
    }));
    await work.releaseButton.click();
    await expect(alice.getByRole('heading', { name: 'Bad gateway' })).toBeVisible();
    await expect(alice.getByText('The proxy could not reach claimdesk.')).toBeVisible();
    expect((await api.get(job)).state).toBe('reserved');
  });
});
