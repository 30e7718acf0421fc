import type { Page, WebSocketRoute } from '@playwright/test';
import { OperatorApi } from './api';
import { BASE_URL, BASE_URL_B, type Person } from './constants';
import { expect, test } from './fixtures';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { SupervisorPage } from './pages/SupervisorPage';
import { WorkPage } from './pages/WorkPage';
import { checkScreen } from './screen';
import { countHandled, recordRequests } from './sends';

// Live updates: every change is published through Redis to every web
// instance, which pushes it over /ws to the pages that may see it. The
// pages patch themselves without a reload.
//
// invoice-review (seed: lease 600 s, strict priority, no scheduled job due
// during a run) is granted to alice and carol: a fresh priority-100 job is
// the head of its line, and nothing else changes its ready count while a
// test runs. bob works support-escalations and content-moderation.

/** Notices reach an open page within this (the brief asks for "at once"). */
const AT_ONCE = 1_000;
/** A supervisor's fragments are re-fetched on a notice (debounced 150 ms). */
const SOON = 2_000;

/** Opens alice's home, and waits until it is live. */
async function liveHome(openAs: (person: Person) => Promise<Page>) {
  const page = await openAs('alice');
  const home = new OperatorHomePage(page);
  await home.goto();
  await home.live.waitUntilLive();
  return { page, home };
}

test.describe('the operator home', () => {
  test('a job enqueued through the API changes the ready count and pops a toast at once; its Claim opens the job', async ({
    openAs,
    jobs,
  }) => {
    const { page: alice, home } = await liveHome(openAs);
    const before = await home.readyCountNow('invoice-review');
    const stillTheSamePage = await home.live.markDocument();

    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-LIVE-TOAST');

    await expect(home.readyCount('invoice-review')).toHaveText(String(before + 1), { timeout: AT_ONCE });
    await expect(home.toastFor(job.title)).toBeVisible({ timeout: AT_ONCE });
    await expect(home.toastFor(job.title)).toContainText(`New job in invoice-review: ${job.title}`);
    await expect(home.toastFor(job.title)).toHaveRole('status');
    await expect(home.toastFor(job.title), 'one toast per job, however many instances').toHaveCount(1);
    await stillTheSamePage();

    await home.toastClaimButton(job.title).click();
    const work = new WorkPage(alice);
    expect(await work.waitForJob()).toBe(job.id);
    await expect(work.title).toHaveText(job.title);
    await expect(work.countdown).toBeVisible();
  });

  test("a toast's Claim claims the job it names, though another is ahead of it in line", async ({ openAs, jobs, api }) => {
    const { page: alice, home } = await liveHome(openAs);

    // Same priority: the first one is ahead in line.
    const ahead = await jobs.create('invoice-review', 'Check invoice INV-E2E-TOAST-AHEAD');
    const named = await jobs.create('invoice-review', 'Check invoice INV-E2E-TOAST-NAMED');
    await expect(home.toastFor(ahead.title)).toBeVisible({ timeout: AT_ONCE });
    await expect(home.toastFor(named.title)).toBeVisible({ timeout: AT_ONCE });

    await home.toastClaimButton(named.title).click();
    const work = new WorkPage(alice);
    expect(await work.waitForJob()).toBe(named.id);
    await expect(work.title).toHaveText(named.title);
    expect((await api.get(ahead)).state).toBe('ready');
  });

  test("a toast's Claim for a job someone else took says so, and the next can be claimed", async ({ openAs, jobs, api }) => {
    const { page: alice, home } = await liveHome(openAs);

    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-TOAST-GONE');
    await expect(home.toastFor(job.title)).toBeVisible({ timeout: AT_ONCE });

    // carol is quicker.
    const carol = new OperatorApi((await openAs('carol')).request);
    const taken = await carol.claim('invoice-review');
    expect(taken?.job.id).toBe(job.id);

    await home.toastClaimButton(job.title).click();
    await expect(alice).toHaveURL('/');
    await expect(home.flash).toHaveText(
      'That job is no longer waiting: someone else took it, or it was withdrawn. Claim the next one below.',
    );
    await expect(home.claimNextButton('invoice-review')).toBeVisible();
    expect((await api.get(job)).reserved_by).toBe('carol');
  });
});

test.describe('the supervisor page', () => {
  test('a claim made in another browser appears in the reservations, and goes when the job is completed', async ({
    openAs,
    jobs,
  }) => {
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-LIVE-SUPERVISOR');

    const sam = new SupervisorPage(await openAs('sam'));
    await sam.goto();
    await sam.live.waitUntilLive();
    await expect(sam.reservation(job.id)).toHaveCount(0);
    const doneLastHour = sam.page.getByTestId('stats-invoice-review').getByTestId('completed-hour');
    const completedBefore = Number(await doneLastHour.textContent());
    const stillTheSamePage = await sam.live.markDocument();

    const alice = await openAs('alice');
    const home = new OperatorHomePage(alice);
    const work = new WorkPage(alice);
    await home.goto();
    await home.claimNextIn('invoice-review');
    expect(await work.waitForJob()).toBe(job.id);

    const row = sam.reservation(job.id);
    await expect(row).toBeVisible({ timeout: SOON });
    await expect(row).toContainText('alice');
    await expect(row).toContainText(job.title);

    await work.complete('Amounts match the purchase order.');
    await expect(home.flash).toHaveText(`Completed. Nice work. “${job.title}”`);

    await expect(row).toHaveCount(0, { timeout: SOON });
    // Done last hour counts the completion: one more than before, unless
    // a completion of the demo's day left the hour meanwhile. So it is
    // compared with the count as the server gives it now, after the
    // completion (and must be one more when no such one left).
    const now = async () => {
      const html = await (await sam.page.request.get('/supervisor/fragments/stats')).text();
      return html.match(/data-testid="stats-invoice-review"[\s\S]*?data-testid="completed-hour">(\d+)</)?.[1];
    };
    await expect.poll(async () => (await doneLastHour.textContent()) === (await now()), { timeout: SOON }).toBe(true);
    expect(Number(await doneLastHour.textContent())).toBeLessThanOrEqual(completedBefore + 1);
    await stillTheSamePage();
  });
});

test.describe('an abandoned reservation', () => {
  test('a short lease is not warned of a minute ahead, in words that would say otherwise', async ({ openAs, jobs }) => {
    // 65 s: the page warns in the last 13; the server's warning comes a
    // minute ahead, and must not show those words then.
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-SHORT-LEASE', { lease_seconds: 65 });
    const alice = await openAs('alice');
    const home = new OperatorHomePage(alice);
    const work = new WorkPage(alice);
    const warned = await countHandled(alice, 'reservation.expiring');
    await home.goto();
    await home.claimNextIn('invoice-review');
    expect(await work.waitForJob()).toBe(job.id);
    // Shown even for a moment (the countdown hides it again within a
    // second) would be too early.
    await alice.evaluate(() => {
      const soon = document.getElementById('soon')!;
      new MutationObserver(() => { if (!soon.hidden) (window as unknown as { shown: boolean }).shown = true; })
        .observe(soon, { attributes: true });
    });
    await expect.poll(warned, { timeout: 15_000 }).toBe(1);
    expect(await alice.evaluate(() => (window as unknown as { shown?: boolean }).shown ?? false)).toBe(false);
    await expect(work.expiring).toBeHidden();
    await expect(work.expiring).toContainText('Less than 13 seconds left');
  });

  test('expires on the page, is reclaimed by the cron and goes to the next operator; the first one can no longer complete it', async ({
    openAs,
    jobs,
    api,
  }) => {
    // Three seconds of lease for this job only; invoice-review's own is 600 s.
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-ABANDONED', { lease_seconds: 3 });

    const alice = await openAs('alice');
    const aliceHome = new OperatorHomePage(alice);
    const aliceWork = new WorkPage(alice);
    await aliceHome.goto();
    await aliceHome.claimNextIn('invoice-review');
    expect(await aliceWork.waitForJob()).toBe(job.id);
    await aliceWork.live.waitUntilLive();
    const held = await api.get(job);
    expect(held.state).toBe('reserved');
    expect(held.reserved_by).toBe('alice');
    expect(held.attempts).toBe(0);

    // alice walks away. The page warns in the lease's last fifth (its last 5
    // seconds at least: here, from the start), then says time is up.
    await expect(aliceWork.expiring).toBeVisible();
    await expect(aliceWork.ended).toBeVisible({ timeout: 10_000 });
    await expect(aliceWork.ended).toContainText('This reservation ended: your time ran out.');
    await expect(aliceWork.expiring).toBeHidden();
    await expect(aliceWork.countdown).toHaveText('expired');
    await expect(aliceWork.completeButton).toBeDisabled();

    // The cron (every second) puts the job back in line, one attempt spent.
    await expect
      .poll(async () => {
        const now = await api.get(job);
        return { state: now.state, attempts: now.attempts };
      }, { timeout: 10_000 })
      .toEqual({ state: 'ready', attempts: 1 });

    // carol gets it next, and at once asks for the time the rest of the
    // test takes: her reservation has the job's 3 s lease too.
    const carol = await openAs('carol');
    const carolHome = new OperatorHomePage(carol);
    const carolWork = new WorkPage(carol);
    const claim = await new OperatorApi(carol.request).claim('invoice-review');
    expect(claim?.job.id).toBe(job.id);
    await new OperatorApi(carol.request).extend(claim!, 600);
    await carol.goto(`/jobs/${job.id}`);
    expect(await carolWork.waitForJob()).toBe(job.id);
    const carols = await api.get(job);
    expect(carols.state).toBe('reserved');
    expect(carols.reserved_by).toBe('carol');

    // alice comes back to her stale page and sends Complete anyway: refused.
    const answered = alice.waitForResponse(
      (r) => r.request().method() === 'POST' && r.url().endsWith(`/jobs/${job.id}/complete`),
    );
    await alice.getByLabel(/^Amount to pay/).fill('1,188.00');
    await aliceWork.completeDespiteLostReservation('Looked fine to me.');
    expect((await answered).status()).toBe(200);
    await expect(aliceWork.ended).toContainText('This reservation ended: your time ran out.');
    await expect(alice.getByTestId('unsaved').getByRole('textbox')).toHaveValue('Looked fine to me.\namount_to_pay: 1,188.00');
    const untouched = await api.get(job);
    expect(untouched.state).toBe('reserved');
    expect(untouched.reserved_by).toBe('carol');
    expect(untouched.result ?? null).toBeNull();

    // carol's reservation is intact: her result is the one stored.
    await carol.getByRole('radio', { name: 'Rejected' }).check();
    await carolWork.complete('Checked it properly.');
    await expect(carolHome.flash).toHaveText(`Completed. Nice work. “${job.title}”`);
    const done = await api.get(job);
    expect(done.state).toBe('completed');
    expect(done.result).toEqual({ notes: 'Checked it properly.', verdict: 'Rejected' });

    // Should alice open the job again, it tells her why it is not hers.
    const again = new WorkPage(await alice.context().newPage());
    await again.page.goto(`/jobs/${job.id}`);
    await expect(again.ended).toContainText('This reservation ended: your time ran out.');
    await expect(again.completeButton).toHaveCount(0);
  });
});

test.describe('two web instances over one store', () => {
  test('an operator on instance B hears of a job enqueued through instance A', async ({ openAs, jobs }) => {
    const bob = await openAs('bob', 'B');
    const home = new OperatorHomePage(bob);
    await home.goto();
    expect(new URL(bob.url()).origin).toBe(BASE_URL_B);
    await home.live.waitUntilLive();
    const before = await home.readyCountNow('support-escalations');
    const stillTheSamePage = await home.live.markDocument();

    // The jobs fixture enqueues through A's API.
    const job = await jobs.create('support-escalations', 'Escalation E2E-LIVE-CROSS-INSTANCE');

    await expect(home.readyCount('support-escalations')).toHaveText(String(before + 1), { timeout: AT_ONCE });
    await expect(home.toastFor(job.title)).toContainText(`New job in support-escalations: ${job.title}`, {
      timeout: AT_ONCE,
    });
    await expect(home.toastFor(job.title)).toHaveCount(1);
    await stillTheSamePage();
  });

  test('a supervisor on instance A sees a reservation made on instance B come and go', async ({ openAs, jobs }) => {
    const job = await jobs.create('content-moderation', 'Reported comment E2E-LIVE-CROSS-INSTANCE');

    const sam = new SupervisorPage(await openAs('sam'));
    await sam.goto();
    expect(new URL(sam.page.url()).origin).toBe(BASE_URL);
    await sam.live.waitUntilLive();
    await expect(sam.reservation(job.id)).toHaveCount(0);
    const stillTheSamePage = await sam.live.markDocument();

    const bob = await openAs('bob', 'B');
    const home = new OperatorHomePage(bob);
    const work = new WorkPage(bob);
    await home.goto();
    await home.claimNextIn('content-moderation');
    expect(await work.waitForJob()).toBe(job.id);
    expect(new URL(bob.url()).origin).toBe(BASE_URL_B);

    const row = sam.reservation(job.id);
    await expect(row).toBeVisible({ timeout: SOON });
    await expect(row).toContainText('bob');
    await expect(row).toContainText(job.title);

    await work.complete('Spam: removed.');
    await expect(home.flash).toHaveText(`Completed. Nice work. “${job.title}”`);
    await expect(row).toHaveCount(0, { timeout: SOON });
    await stillTheSamePage();
  });
});

test.describe('the connection indicator', () => {
  test('says live once connected, on every kind of page and on both instances', async ({ openAs, jobs }) => {
    const alice = new OperatorHomePage(await openAs('alice'));
    await alice.goto();
    await alice.live.waitUntilLive();
    await expect(alice.live.indicator).toHaveText('live');

    const sam = new SupervisorPage(await openAs('sam'));
    await sam.goto();
    await sam.live.waitUntilLive();
    await expect(sam.live.indicator).toHaveText('live');

    const job = await jobs.create('content-moderation', 'Reported comment E2E-LIVE-INDICATOR');
    const bobPage = await openAs('bob', 'B');
    const bob = new OperatorHomePage(bobPage);
    await bob.goto();
    await bob.live.waitUntilLive();
    await expect(bob.live.indicator).toHaveText('live');
    await bob.claimNextIn('content-moderation');
    const work = new WorkPage(bobPage);
    expect(await work.waitForJob()).toBe(job.id);
    await work.live.waitUntilLive();
    await expect(work.live.indicator).toHaveText('live');
  });

  test('says connecting until the websocket is up', async ({ openAs }) => {
    const page = await openAs('alice');
    const ws = await holdWebSockets(page);
    const home = new OperatorHomePage(page);
    await home.goto();
    await expect.poll(() => ws.count()).toBe(1);
    await home.live.expectState('connecting');
    await expect(home.live.indicator).toHaveText('connecting…');

    ws.letThrough(0);
    await home.live.waitUntilLive();
    await expect(home.live.indicator).toHaveText('live');
  });

  test('says reconnecting when the connection drops, then catches up on what it missed and is live again', async ({
    openAs,
    jobs,
  }) => {
    const page = await openAs('alice');
    const ws = await holdWebSockets(page);
    const home = new OperatorHomePage(page);
    await home.goto();
    ws.letThrough(0);
    await home.live.waitUntilLive();
    const before = await home.readyCountNow('invoice-review');
    const stillTheSamePage = await home.live.markDocument();

    // The server itself still answers: the page asks it, and shows no
    // banner; the forms go on working.
    await page.evaluate(() => {
      const banner = document.getElementById('offline')!;
      new MutationObserver(() => { if (!banner.hidden) (window as unknown as { banner: boolean }).banner = true; })
        .observe(banner, { attributes: true });
    });
    const asked = page.waitForResponse((r) => new URL(r.url()).pathname === '/healthz');
    await ws.drop(0);
    await home.live.expectState('reconnecting');
    await expect(home.live.indicator).toHaveText('reconnecting…');
    expect((await asked).ok()).toBe(true);
    // The page tries again (after half a second); hold that attempt back.
    await expect.poll(() => ws.count()).toBe(2);
    await home.live.expectState('reconnecting');

    // A job arrives while the page hears nothing…
    await jobs.create('invoice-review', 'Check invoice INV-E2E-LIVE-MISSED');

    // …and once connected again the snapshot brings the count up to date.
    ws.letThrough(1);
    await home.live.waitUntilLive();
    await expect(home.readyCount('invoice-review')).toHaveText(String(before + 1), { timeout: AT_ONCE });
    expect(await page.evaluate(() => (window as unknown as { banner?: boolean }).banner ?? false), 'the banner showed').toBe(false);
    await stillTheSamePage();
  });

  test('offline: a banner says so, and the work page keeps what was typed and holds its forms until the server is back', async ({
    openAs,
    jobs,
    api,
  }) => {
    const page = await openAs('alice');
    const ws = await holdWebSockets(page);
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-OFFLINE');
    const home = new OperatorHomePage(page);
    const work = new WorkPage(page);
    await home.goto();
    ws.letThrough(0);
    await home.live.waitUntilLive();
    await home.claimNextIn('invoice-review');
    expect(await work.waitForJob()).toBe(job.id);
    ws.letThrough(1);
    await work.live.waitUntilLive();
    const stillTheSamePage = await work.live.markDocument();
    await work.notes.fill('Checked the amounts.');

    // The server is out of reach: the live connection drops and stays
    // down, and the page's own question goes unanswered.
    await page.route('**/healthz', (route) => route.abort('connectionrefused'));
    await ws.drop(1);
    const banner = page.getByTestId('offline');
    await expect(banner).toBeVisible({ timeout: 5_000 });
    await expect(banner).toContainText('Connection lost.');
    const sent = await recordRequests(page);
    // Its buttons say they wait; pressed anyway, nothing is sent.
    await expect(work.completeButton).toHaveAttribute('aria-disabled', 'true');
    await work.completeButton.click({ force: true });
    await expect(banner).toBeFocused();
    expect(await sent()).toEqual([]);
    await expect(work.notes).toHaveValue('Checked the amounts.');
    await checkScreen(page, 'the work page, offline', false);

    // Back: the banner goes by itself and the form is sent as it was.
    await page.unroute('**/healthz');
    ws.letThrough(2);
    await work.live.waitUntilLive();
    await expect(banner).toBeHidden();
    await stillTheSamePage();
    await work.completeButton.click();
    await expect(page.getByTestId('flash')).toContainText('Completed. Nice work.');
    const done = await api.get(job);
    expect(done.state).toBe('completed');
    expect(done.result).toEqual({ notes: 'Checked the amounts.' });
  });
});

/**
 * Routes the page's /ws connections through Playwright. Each one waits,
 * still connecting as far as the page knows, until the test lets it
 * through to the server; the test can also drop one, as a network failure
 * or a restarted instance would.
 */
async function holdWebSockets(page: Page) {
  const routes: WebSocketRoute[] = [];
  const gates: Array<() => void> = [];
  const gate = (i: number) =>
    new Promise<void>((resolve) => {
      gates[i] = resolve;
    });
  const opened: Array<Promise<void>> = [];
  for (let i = 0; i < 10; i++) opened.push(gate(i));
  await page.routeWebSocket(/\/ws$/, async (route) => {
    const i = routes.push(route) - 1;
    await opened[i];
    route.connectToServer();
  });
  return {
    count: () => routes.length,
    letThrough: (i: number) => gates[i](),
    drop: async (i: number) => {
      await routes[i].close({ code: 1012, reason: 'e2e: connection dropped' });
    },
  };
}

// What an open page asks the server for, as cmd/bench's floor scenario
// models it: counts come in notices and cost no request; a page fetches
// its fragments after (re)connecting, when its own reservations change,
// and, for a supervisor, at most about once a second while others' do.
test.describe('what an open page fetches', () => {
  /** Counts the page's fragment requests by path. */
  function fragmentRequests(page: Page): string[] {
    const paths: string[] = [];
    page.on('request', (r) => {
      const path = new URL(r.url()).pathname;
      if (path.includes('/fragments/')) paths.push(path);
    });
    return paths;
  }

  test("an operator's home patches counts without a request, and fetches once when their own reservations change", async ({
    openAs,
    jobs,
  }) => {
    const alice = await openAs('alice');
    const home = new OperatorHomePage(alice);
    const fetched = fragmentRequests(alice);
    const sent = await recordRequests(alice, { fromStart: true });
    const fragmentsSent = async () => (await sent()).filter((p) => p.includes('/fragments/')).length;
    // The page's time stands still but where the test moves it: every
    // fetch it would make is due when the test says, and its 15 s poll
    // never is.
    await alice.clock.install();
    await alice.clock.pauseAt(Date.now() + 1_000);
    await home.goto();
    await home.live.waitUntilLive();
    // The catch-up after connecting, within a random moment of 2 s.
    await alice.clock.runFor(2_100);
    await expect.poll(() => fetched.length).toBe(1);
    const before = await home.readyCountNow('invoice-review');

    // New jobs, and another operator's claim: counts and toasts, no request.
    const first = await jobs.create('invoice-review', 'Check invoice INV-E2E-FETCH-1');
    await jobs.create('invoice-review', 'Check invoice INV-E2E-FETCH-2');
    await expect(home.readyCount('invoice-review')).toHaveText(String(before + 2), { timeout: AT_ONCE });
    await expect(home.toastFor(first.title)).toBeVisible();
    const carol = new OperatorApi((await openAs('carol')).request);
    expect(await carol.claim('invoice-review')).not.toBeNull();
    await expect(home.readyCount('invoice-review')).toHaveText(String(before + 1), { timeout: AT_ONCE });
    // Whatever the notices asked for is due by now (a refresh waits at
    // most 250 ms); the page sends a fetch at once when it is.
    await alice.clock.runFor(1_000);
    expect(await fragmentsSent(), 'counts and new jobs cost no request').toBe(1);

    // alice claims in another tab: her home fetches once, and lists it.
    // The page's clock moves on until it has fetched: the claim's notice
    // may reach the page after any one step, and its fetch is due 50 to
    // 250 ms of page time after it.
    const mine = await new OperatorApi(alice.request).claim('invoice-review');
    await expect(async () => {
      await alice.clock.runFor(250);
      await expect(home.myReservations).toContainText(mine!.job.title, { timeout: 100 });
    }).toPass({ timeout: 5_000 });
    await alice.clock.runFor(1_000);
    expect(await fragmentsSent()).toBe(2);
    expect(fetched).toEqual(['/fragments/home', '/fragments/home']);
  });

  test("a fragment rendered before a notice came, and swapped in after it, does not take the page back to older counts", async ({
    openAs,
    jobs,
  }) => {
    const { page: alice, home } = await liveHome(openAs);
    const before = await home.readyCountNow('invoice-review');
    // The home fragment is rendered at once, but reaches the page only
    // when the test lets it: after a new job's notice.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let rendered!: () => void;
    const wasRendered = new Promise<void>((resolve) => (rendered = resolve));
    await alice.route('**/fragments/home', async (route) => {
      const response = await route.fetch();
      rendered();
      await held;
      await route.fulfill({ response });
    });
    const swapped = alice.evaluate(
      () => new Promise<void>((resolve) => document.addEventListener('htmx:afterSettle', () => resolve(), { once: true })),
    );
    await alice.evaluate(() => document.body.dispatchEvent(new Event('refresh')));
    await wasRendered;
    await jobs.create('invoice-review', 'Check invoice INV-E2E-FETCH-RACE');
    await expect(home.readyCount('invoice-review')).toHaveText(String(before + 1), { timeout: AT_ONCE });
    release();
    await swapped;
    // Nothing changes the count after this: what the page shows once the
    // swap settled is what it keeps showing.
    expect(await home.readyCountNow('invoice-review')).toBe(before + 1);
  });

  test("a supervisor's tables fetch at most about once a second while jobs come and go", async ({ openAs, jobs }) => {
    const sam = new SupervisorPage(await openAs('sam'));
    const fetched = fragmentRequests(sam.page);
    await sam.goto();
    await sam.live.waitUntilLive();
    await expect.poll(() => fetched.length, { timeout: 3_000 }).toBeGreaterThan(0);
    await sam.page.waitForTimeout(1_500);
    fetched.length = 0;

    const started = Date.now();
    for (let i = 0; i < 8; i++) await jobs.create('invoice-review', `Check invoice INV-E2E-FETCH-SUP-${i}`);
    await sam.page.waitForTimeout(1_500);
    const seconds = (Date.now() - started) / 1000;
    const stats = fetched.filter((p) => p.endsWith('/stats')).length;
    expect(stats, `stats fetched ${stats} times in ${seconds.toFixed(1)} s of changes`).toBeGreaterThan(0);
    expect(stats).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
    expect(fetched.filter((p) => p.endsWith('/reservations')).length).toBe(stats);
  });
});
