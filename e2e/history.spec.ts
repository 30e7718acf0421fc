import { failUntilDead, OperatorApi } from './api';
import { expect, test } from './fixtures';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { giveReason } from './pages/SupervisorPage';
import { WorkPage } from './pages/WorkPage';

// Every change of a job is kept in its history. A supervisor reads it on the
// job's page (status, result, timeline, in their own time zone); an
// operator's home lists the reservations of theirs that ended, and how.
//
// Seed queues: address-verification allows 5 attempts, content-moderation
// and invoice-review 3. billing-bot produces into address-verification and
// invoice-review, helpdesk-bot into content-moderation.

test.describe("a supervisor's view of a job", () => {
  test('a completed job shows who completed it and when, its notes and result fields, and its timeline in local time', async ({
    openAs,
    jobs,
  }) => {
    const job = await jobs.create('address-verification', 'Verify address: Rue de Rivoli 1, 75001 Paris');

    const carol = await openAs('carol');
    const home = new OperatorHomePage(carol);
    const work = new WorkPage(carol);
    await home.goto();
    await home.claimNextIn('address-verification');
    expect(await work.waitForJob()).toBe(job.id);
    await work.complete('Matches the land register.\nPostcode was missing.', { postcode: '75001', verified: 'yes' });
    await expect(home.flash).toHaveText(`Completed. Nice work. “${job.title}”`);

    // sam reads it in India (UTC+5:30, no daylight saving time), in US English.
    const sam = new WorkPage(await openAs('sam', 'A', { timezoneId: 'Asia/Kolkata', locale: 'en-US' }));
    await sam.goto(job.id);
    await expect(sam.title).toHaveText(job.title);
    await expect(sam.state).toHaveText('completed');
    await expect(sam.attempts).toHaveText('attempt 1 of 5');
    await expect(sam.completedBy).toContainText('Completed by carol, ');
    await expect(sam.resultNotes).toHaveText('Matches the land register.\nPostcode was missing.');
    await expect(sam.resultFields.getByRole('term')).toHaveText(['Postcode', 'Verified']);
    await expect(sam.resultFields.getByRole('definition')).toHaveText(['75001', 'yes']);
    await expect(sam.lastError).toHaveCount(0);
    await expect(sam.page.getByTestId('job-actions').getByRole('button')).toHaveCount(0);

    // The time is sam's local time; the exact instant stays at hand.
    const completedAt = sam.completedBy.getByRole('time');
    const iso = await completedAt.getAttribute('datetime');
    expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    await expect(completedAt).toHaveAttribute('title', iso!);
    await expect(completedAt).toContainText(indiaClock(iso!));
    await expect(completedAt).not.toContainText('UTC');

    // The timeline, newest first.
    await expect(sam.timelineEntries).toHaveCount(3);
    await expect(sam.timelineEntries.nth(0)).toContainText('completed by carol');
    await expect(sam.timelineEntries.nth(1)).toContainText('claimed by carol (attempt 1) · deadline');
    await expect(sam.timelineEntries.nth(2)).toContainText('enqueued by billing-bot');
    await expect(sam.timelineEntries.nth(0).getByRole('time')).toContainText(indiaClock(iso!));
  });

  test('a job that failed on every attempt reads "all 3 attempts used", with each failure in its timeline', async ({
    openAs,
    jobs,
  }) => {
    const job = await jobs.create('content-moderation', 'Video will not play in any browser');

    // bob, carol and dana fail it in turn: each failure puts it back at the
    // head of the line, for anyone but who reported it.
    const ops = [];
    for (const name of ['bob', 'carol', 'dana'] as const) ops.push(new OperatorApi((await openAs(name)).request));
    await failUntilDead(ops, job, (attempt) => `Player error ${attempt}: codec not supported.`);

    const sam = new WorkPage(await openAs('sam'));
    await sam.goto(job.id);
    await expect(sam.state).toHaveText('dead');
    await expect(sam.attempts).toHaveText('all 3 attempts used');
    await expect(sam.lastError).toHaveText('Player error 3: codec not supported.');
    await expect(sam.resultNotes).toHaveCount(0);

    await expect(sam.timelineEntries).toHaveCount(7);
    await expect(sam.timelineEntries.nth(0)).toContainText(
      'failed by dana: Player error 3: codec not supported. · no attempts left: dead',
    );
    await expect(sam.timelineEntries.nth(1)).toContainText('claimed by dana (attempt 3)');
    await expect(sam.timelineEntries.nth(2)).toContainText('failed by carol: Player error 2: codec not supported.');
    await expect(sam.timelineEntries.nth(5)).toContainText('claimed by bob (attempt 1)');
    await expect(sam.timelineEntries.nth(6)).toContainText('enqueued by helpdesk-bot');

    // Requeued from its own page: back in line with fresh attempts, and the
    // page, which it returns to, says so.
    const actions = sam.page.getByTestId('job-actions');
    await expect(actions.getByRole('button')).toHaveText(['Requeue']);
    await actions.getByRole('button', { name: 'Requeue' }).click();
    await giveReason(sam.page);
    await expect(sam.page.getByTestId('flash')).toContainText('is ready.');
    await expect(sam.state).toHaveText('ready');
    await expect(sam.attempts).toHaveText('0 of 3 attempts used');
    await expect(sam.timelineEntries.nth(0)).toContainText('requeued by sam');
    await expect(actions.getByRole('button')).toHaveText(['Cancel']);
  });
});

test.describe("a supervisor's job page stays current", () => {
  test('it shows the job claimed, then completed, as it happens, without a reload', async ({ openAs, jobs }) => {
    const job = await jobs.create('content-moderation', 'Comment thread reported as spam');

    const sam = new WorkPage(await openAs('sam'));
    await sam.goto(job.id);
    await expect(sam.state).toHaveText('ready');
    await expect(sam.timelineEntries).toHaveCount(1);
    await sam.live.waitUntilLive();
    // Marks this very document: a reload would lose it.
    await sam.page.evaluate(() => document.documentElement.setAttribute('data-same-document', 'yes'));

    const bob = new OperatorApi((await openAs('bob')).request);
    const claim = await bob.claim('content-moderation');
    expect(claim?.job.id).toBe(job.id);
    await expect(sam.state).toHaveText('reserved');
    await expect(sam.timelineEntries.nth(0)).toContainText('claimed by bob (attempt 1)');

    await bob.complete(claim!, { notes: 'Spam: removed.' });
    await expect(sam.state).toHaveText('completed');
    await expect(sam.completedBy).toContainText('Completed by bob, ');
    await expect(sam.resultNotes).toHaveText('Spam: removed.');
    await expect(sam.timelineEntries).toHaveCount(3);
    // Times drawn afresh are in local time too.
    await expect(sam.timelineEntries.nth(0).getByRole('time')).not.toContainText('UTC');
    await expect(sam.page.locator('html')).toHaveAttribute('data-same-document', 'yes');
  });
});

test.describe('my recent work', () => {
  test('lists the jobs I finished, newest first, with how each ended', async ({ openAs, jobs }) => {
    const done = await jobs.create('invoice-review', 'Check invoice INV-E2E-RECENT-DONE');
    const back = await jobs.create('invoice-review', 'Check invoice INV-E2E-RECENT-BACK', { priority: 99 });

    const alice = await openAs('alice');
    const home = new OperatorHomePage(alice);
    const work = new WorkPage(alice);
    await home.goto();
    await expect(home.recentWork.getByRole('heading', { name: 'My recent work' })).toBeVisible();
    await expect(home.recentItemsFor(done.title)).toHaveCount(0);

    await home.claimNextIn('invoice-review');
    expect(await work.waitForJob()).toBe(done.id);
    await work.complete('Paid in full.');
    await expect(home.flash).toHaveText(`Completed. Nice work. “${done.title}”`);
    await expect(home.recentItemsFor(done.title)).toContainText('Completed');
    await expect(home.recentItemsFor(done.title)).toContainText('invoice-review');

    await home.claimNextIn('invoice-review');
    expect(await work.waitForJob()).toBe(back.id);
    await work.release();
    await expect(home.flash).toHaveText(`Given back: it keeps its place in line. “${back.title}”`);

    await expect(home.recentItems().first()).toContainText(back.title);
    await expect(home.recentItems().first()).toContainText('Gave it back');
    await expect(home.recentItems().nth(1)).toContainText(done.title);
    await expect(home.recentItemsFor(done.title)).toHaveCount(1);
  });
});

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** The clock time of an instant in India (UTC+5:30), as en-US shows it: "9:07:05" (of "9:07:05 PM"). */
function indiaClock(iso: string): string {
  const d = new Date(Date.parse(iso) + 330 * 60_000);
  return `${d.getUTCHours() % 12 || 12}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}
