import { expect, test } from './fixtures';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { SupervisorPage } from './pages/SupervisorPage';
import { WorkPage } from './pages/WorkPage';
import { checkScreen } from './screen';

test.describe('working a job', () => {
  test("a short lease warns only in its last fifth; Can't be done says what it spends", async ({ openAs, jobs }) => {
    // content-moderation's lease is 45 s: the warning waits for the last 9.
    const job = await jobs.create('content-moderation', 'Listing with a short lease');
    const bob = await openAs('bob');
    const home = new OperatorHomePage(bob);
    await home.goto();
    await home.claimNextIn('content-moderation');
    const work = new WorkPage(bob);
    expect(await work.waitForJob()).toBe(job.id);
    await expect(work.countdown).toHaveText(/^0:4\d$/);
    await expect(work.expiring).toBeHidden();
    await bob.getByText("Can't be done…").click();
    await expect(bob.getByTestId('fail-words')).toHaveText(
      'This spends attempt 1 of 3: the job goes back to its place in line, for someone else to try.',
    );
    // The give-back lands before the page closes: a page closed while its
    // navigation is under way can hold the browser's context open.
    await work.release();
    await expect(bob).toHaveURL('/');
    await expect(home.flash).toHaveText(`Given back: it keeps its place in line. “${job.title}”`);
  });

  test('claim, watch the countdown, complete with a result; supervisor and API see it completed', async ({
    openAs,
    jobs,
    api,
  }) => {
    const job = await jobs.create('address-verification', 'Verify address: Hauptstr. 1, 10115 Berlin');

    const carol = await openAs('carol');
    const home = new OperatorHomePage(carol);
    await home.goto();
    await expect(home.readyCount('address-verification')).not.toHaveText('0');
    await home.claimNextIn('address-verification');

    const work = new WorkPage(carol);
    expect(await work.waitForJob()).toBe(job.id);
    await expect(work.title).toHaveText(job.title);
    await expect(work.countdown).toHaveText(/^\d{1,2}:\d{2}$/);
    // It ticks: the lease is 300 s, so within a few seconds it shows 4:5x.
    await expect(work.countdown).toHaveText(/^4:5\d$/);
    await expect(work.payload).toContainText('e2e');

    await work.complete('Checked against the reference data; address is fine.', { verified: 'yes' });

    await expect(carol).toHaveURL('/');
    await expect(home.flash).toHaveText(`Completed. Nice work. “${job.title}”`);

    // The supervisor, in a browser of their own, finds it among the
    // completed (a day's worth of them: by its title).
    const sam = new SupervisorPage(await openAs('sam'));
    await sam.gotoQueue('address-verification', 'completed', job.title);
    await expect(sam.jobRow(job.id)).toBeVisible();
    await expect(sam.jobRow(job.id)).toContainText(job.title);

    // And the producer reads the result back.
    const done = await api.get(job);
    expect(done.state).toBe('completed');
    expect(done.result).toEqual({ notes: 'Checked against the reference data; address is fine.', verified: 'yes' });
  });

  test('giving a job back returns it to the queue, to be claimed again', async ({ openAs, jobs, api }) => {
    const job = await jobs.create('content-moderation', 'Reported comment: spam link in thread 50112');

    const bob = await openAs('bob');
    const home = new OperatorHomePage(bob);
    await home.goto();
    await home.claimNextIn('content-moderation');
    const work = new WorkPage(bob);
    expect(await work.waitForJob()).toBe(job.id);
    expect((await api.get(job)).state).toBe('reserved');

    await work.release();
    await expect(bob).toHaveURL('/');
    await expect(home.flash).toHaveText(`Given back: it keeps its place in line. “${job.title}”`);

    const back = await api.get(job);
    expect(back.state).toBe('ready');
    expect(back.reserved_by ?? null).toBeNull();
    expect(back.attempts).toBe(0); // giving back spends no attempt

    // The supervisor sees it waiting again…
    const sam = new SupervisorPage(await openAs('sam'));
    await sam.gotoQueue('content-moderation', 'ready');
    await expect(sam.jobRow(job.id)).toContainText(job.title);
    await sam.gotoQueue('content-moderation', 'reserved');
    await expect(sam.jobRow(job.id)).toHaveCount(0);

    // …and it kept its place at the head of the line: the next claim gets it again.
    await home.claimNextIn('content-moderation');
    expect(await work.waitForJob()).toBe(job.id);
    await expect(work.title).toHaveText(job.title);
    await expect(work.countdown).toBeVisible();
  });

  test('pressing c on the home claims the next job', async ({ openAs, jobs }) => {
    // carol's queues all have strict priority: a priority-100 job beats
    // every other head of them. (alice's support-escalations ages
    // priorities: after a few minutes of uptime its seed jobs outrank it.)
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-KEYBOARD');

    const carol = await openAs('carol');
    const home = new OperatorHomePage(carol);
    await home.goto();
    await expect(home.claimAny).toBeEnabled();
    await home.pressClaimHotkey();

    const work = new WorkPage(carol);
    expect(await work.waitForJob()).toBe(job.id);
    await expect(work.title).toHaveText(job.title);
    await expect(work.countdown).toBeVisible();
  });

  test('the claim-any button claims the best job across my queues', async ({ openAs, jobs }) => {
    // carol's queues all have strict priority (see above).
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-ANY');

    const carol = await openAs('carol');
    const home = new OperatorHomePage(carol);
    await home.goto();
    await home.claimAny.click();

    const work = new WorkPage(carol);
    expect(await work.waitForJob()).toBe(job.id);

    // The home lists what alice holds.
    await home.goto();
    await expect(home.myReservations.getByRole('link', { name: job.title })).toBeVisible();
  });
});

test.describe('a reservation taken away', () => {
  test('after a force release by the supervisor, a stale Complete is refused: the page says why and shows the unsaved notes', async ({
    openAs,
    jobs,
    api,
  }) => {
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-FORCED');

    const alice = await openAs('alice');
    const home = new OperatorHomePage(alice);
    await home.goto();
    await home.claimNextIn('invoice-review');
    const work = new WorkPage(alice);
    expect(await work.waitForJob()).toBe(job.id);
    await work.live.waitUntilLive();
    await expect(work.ended).toBeHidden();
    const stillTheSamePage = await work.live.markDocument();

    const sam = new SupervisorPage(await openAs('sam'));
    await sam.goto();
    await expect(sam.reservation(job.id)).toContainText('alice');
    await expect(sam.reservation(job.id)).toContainText(job.title);
    const question = await sam.forceRelease(job.id);
    expect(question).toBe('Take this job from alice and put it back in line?');
    await expect(sam.flash).toHaveText(`“${job.title}” is ready. alice no longer holds it.`);
    await expect(sam.page).toHaveURL('/supervisor');
    await expect(sam.reservation(job.id)).toHaveCount(0);

    // alice's open page hears of it at once, says who took it and locks its buttons…
    await expect(work.ended).toBeVisible({ timeout: 2_000 });
    await expect(work.ended).toContainText('sam took this job back.');
    for (const button of [work.completeButton, work.releaseButton, work.skipButton, work.extendButton]) {
      await expect(button).toBeDisabled();
    }
    await expect(work.extendHint).toBeHidden(); // no time to offer any more
    await stillTheSamePage();

    // …and should alice send the form anyway, the server refuses it.
    const answered = alice.waitForResponse(
      (r) => r.request().method() === 'POST' && r.url().endsWith(`/jobs/${job.id}/complete`),
    );
    await alice.getByLabel(/^Amount to pay/).fill('1,188.00');
    await work.completeDespiteLostReservation('Done, I think.');
    // Answered in place: the page says why the reservation ended, and
    // shows the notes it did not save, to copy.
    expect((await answered).status()).toBe(200);
    await expect(work.ended).toContainText('sam took this job back.');
    await expect(alice.getByTestId('unsaved').getByRole('textbox')).toHaveValue('Done, I think.\namount_to_pay: 1,188.00');
    await expect(work.completeButton).toHaveCount(0);
    await stillTheSamePage();

    const after = await api.get(job);
    expect(after.state).toBe('ready');
    expect(after.result ?? null).toBeNull();

    // Opening the job again tells alice why it is gone, without the buttons,
    // and leads on: the next job of the queue (this one, back at the head
    // of the line).
    await alice.goto(`/jobs/${job.id}`);
    await expect(work.ended).toBeVisible();
    await expect(work.ended).toContainText('sam took this job back.');
    await expect(work.completeButton).toHaveCount(0);
    await work.ended.getByRole('button', { name: 'Claim next in invoice-review' }).click();
    await alice.waitForURL(`/jobs/${job.id}`);
    await expect(work.completeButton).toBeEnabled();
    expect((await api.get(job)).reserved_by).toBe('alice');
  });

  test('a Complete refused in place (an amount that is no number) leaves the page listening: a force release right after is told at once', async ({
    openAs,
    jobs,
  }) => {
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-REFUSED-THEN-TAKEN');
    const alice = await openAs('alice');
    const home = new OperatorHomePage(alice);
    await home.goto();
    await home.claimNextIn('invoice-review');
    const work = new WorkPage(alice);
    expect(await work.waitForJob()).toBe(job.id);
    await work.live.waitUntilLive();
    const amount = alice.getByLabel(/^Amount to pay/);
    await alice.getByRole('radio', { name: 'Approved' }).check();
    await amount.fill('1188 euros');
    await work.completeButton.click();
    await expect(alice.getByTestId('problem-amount_to_pay')).toHaveText(/^Enter an amount like 1.188.00\.$/);
    await expect(amount).toHaveValue('1188 euros');
    // The operator is taken to the value, not to the top of the form.
    await expect(amount).toBeFocused();

    const sam = new SupervisorPage(await openAs('sam'));
    await sam.goto();
    await sam.forceRelease(job.id);
    await expect(work.ended).toBeVisible({ timeout: 2_000 });
    await expect(work.ended).toContainText('sam took this job back.');
    // sam's take-back is a form post: the page its answer leads to says so
    // (and the test ends on a page that finished loading: closing one
    // mid-navigation can hang).
    await expect(sam.flash).toHaveText(`“${job.title}” is ready. alice no longer holds it.`);
  });

  test('canceled by the supervisor: the open work page says "sam canceled this job" at once, and again after a reload', async ({
    openAs,
    jobs,
    api,
  }) => {
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-CANCELED');

    const alice = await openAs('alice');
    const home = new OperatorHomePage(alice);
    await home.goto();
    await home.claimNextIn('invoice-review');
    const work = new WorkPage(alice);
    expect(await work.waitForJob()).toBe(job.id);
    await work.live.waitUntilLive();
    await expect(work.ended).toBeHidden();
    const stillTheSamePage = await work.live.markDocument();

    const sam = new SupervisorPage(await openAs('sam'));
    await sam.goto();
    await expect(sam.reservation(job.id)).toContainText('alice');
    const question = await sam.cancelReservation(job.id);
    expect(question).toBe('Cancel this job for good? alice loses it.');
    await expect(sam.reservation(job.id)).toHaveCount(0);
    expect((await api.get(job)).state).toBe('canceled');

    await expect(work.ended).toBeVisible({ timeout: 2_000 });
    await expect(work.ended).toContainText('sam canceled this job.');
    await expect(work.ended).toHaveRole('status');
    for (const button of [work.completeButton, work.releaseButton, work.skipButton, work.extendButton]) {
      await expect(button).toBeDisabled();
    }
    await stillTheSamePage();
    await checkScreen(alice, 'the work page as the reservation ended', false);

    await alice.reload();
    await expect(work.title).toHaveText(job.title);
    await expect(work.ended).toContainText('sam canceled this job.');
    await checkScreen(alice, 'the work page of a reservation that ended', false);
    await expect(work.completeButton).toHaveCount(0);
    await expect(work.payload).toHaveCount(0); // what a job is, is for its holder only
  });

  test('completed in another tab: the other tab says so', async ({ openAs, jobs }) => {
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-TWO-TABS');

    const alice = await openAs('alice');
    const home = new OperatorHomePage(alice);
    await home.goto();
    await home.claimNextIn('invoice-review');
    const work = new WorkPage(alice);
    expect(await work.waitForJob()).toBe(job.id);

    // The same job open in a second tab of the same browser.
    const other = new WorkPage(await alice.context().newPage());
    await other.page.goto(`/jobs/${job.id}`);
    await expect(other.completeButton).toBeEnabled();
    await other.live.waitUntilLive();

    await work.complete('Done here.');
    await expect(home.flash).toHaveText(`Completed. Nice work. “${job.title}”`);

    await expect(other.ended).toContainText('This reservation ended: completed in another tab.', { timeout: 2_000 });
    await expect(other.completeButton).toBeDisabled();
  });
});
