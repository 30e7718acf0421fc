import { expect, test } from './fixtures';
import { SupervisorPage, giveReason } from './pages/SupervisorPage';
import { WorkPage } from './pages/WorkPage';
import { checkScreen } from './screen';

// A supervisor who takes a job back, cancels or requeues it may say why,
// in the box that asks before it goes ahead; a queue may require it. The
// operator whose job it was reads who took it and why, in neutral words,
// at once and after a reload; the job's history keeps the reason.

const QUEUE = 'invoice-review';

test.describe('reasons on take-backs', () => {
  // Two people's pages, a take-back and a reload (and a settings change
  // each way): longer than most.
  test.slow();
  test('a force release with a reason: the holder reads it at once and after a reload, and the history keeps it', async ({
    openAs,
    claimAs,
    jobs,
    api,
  }) => {
    const job = await jobs.create(QUEUE, 'Check invoice INV-E2E-TAKEN-WITH-REASON');
    const { page: alice, work } = await claimAs('alice', job);
    await work.live.waitUntilLive();
    const stillTheSamePage = await work.live.markDocument();

    const sam = new SupervisorPage(await openAs('sam'));
    await sam.goto();
    const reason = 'The customer called: billing looks at this one first.';
    await sam.reservation(job.id).getByTestId('requeue').click();
    // The live reservations fetch themselves afresh while the box is open:
    // the form it answers is replaced, and still sent as it was shown.
    await sam.page.evaluate(() => {
      document.getElementById('reservations')?.setAttribute('data-before', '');
      document.body.dispatchEvent(new Event('refresh'));
    });
    await expect(sam.page.locator('#reservations[data-before]')).toHaveCount(0);
    expect(await giveReason(sam.page, reason)).toBe('Take this job from alice and put it back in line?');
    await expect(sam.flash).toHaveText(`“${job.title}” is ready. alice no longer holds it.`);

    await expect(work.ended).toBeVisible({ timeout: 2_000 });
    await expect(work.ended.locator('[data-ended-why]')).toHaveText(`sam took this job back: ${reason}`);
    await expect(work.ended).toHaveRole('status');
    await stillTheSamePage();
    await checkScreen(alice, 'the work page of a job taken back with a reason', false);

    await alice.reload();
    await expect(work.ended.locator('[data-ended-why]')).toHaveText(`sam took this job back: ${reason}`);
    expect((await api.get(job)).state).toBe('ready');

    await sam.page.goto(`/jobs/${job.id}`);
    const history = new WorkPage(sam.page);
    await expect(history.timelineEntries.nth(0)).toContainText(`taken back by sam from alice: ${reason}`);
  });

  test('a queue that requires a reason: the box will not go ahead without one, and the cancel says why', async ({
    openAs,
    claimAs,
    jobs,
    api,
  }) => {
    const sam = await openAs('sam');
    const requireReason = async (on: boolean) => {
      await sam.goto(`/supervisor/queues/${QUEUE}`);
      await sam.getByTestId('require-reason').setChecked(on);
      await sam.getByRole('button', { name: 'Save settings' }).click();
      await expect(sam.getByTestId('flash')).toHaveText(`Saved the settings of ${QUEUE}.`);
    };
    await requireReason(true);
    try {
      const job = await jobs.create(QUEUE, 'Check invoice INV-E2E-REASON-REQUIRED');
      const { work } = await claimAs('alice', job);
      await work.live.waitUntilLive();

      await sam.goto(`/jobs/${job.id}`);
      await sam.getByTestId('job-actions').getByRole('button', { name: 'Cancel' }).click();
      const box = sam.getByTestId('reason-dialog');
      await expect(box).toBeVisible();
      await expect(box).toContainText('required in this queue');
      await box.getByTestId('reason-go').click();
      // Refused at the field: nothing was sent.
      await expect(box).toBeVisible();
      await expect(box.getByRole('textbox', { name: /Reason/ })).toHaveJSProperty('validity.valueMissing', true);
      expect((await api.get(job)).state).toBe('reserved');
      await box.getByRole('button', { name: 'Back' }).click();
      await expect(box).toBeHidden();

      await sam.getByTestId('job-actions').getByRole('button', { name: 'Cancel' }).click();
      expect(await giveReason(sam, 'Sent twice by the billing system.')).toBe('Cancel this job for good? alice loses it.');
      await expect(sam.getByTestId('flash')).toContainText('is canceled. alice no longer holds it.');
      await expect(work.ended.locator('[data-ended-why]')).toHaveText('sam canceled this job: Sent twice by the billing system.', { timeout: 2_000 });
      expect((await api.get(job)).state).toBe('canceled');
    } finally {
      await requireReason(false);
    }
  });
});
