import { expect, test } from './fixtures';
import { SupervisorPage } from './pages/SupervisorPage';
import { WorkPage } from './pages/WorkPage';
import { SCREENS, checkScreen } from './screen';

// What a holder types is saved as the job's draft as they type: it comes
// back after a reload, and when the job is taken from them it is kept,
// for the next holder to start from and for supervisors to read, with the
// job's history.

const QUEUE = 'invoice-review';

test.describe('kept drafts', () => {
  // Three people's pages and a reload.
  test.slow();
  test('a draft comes back after a reload, is kept when the job is taken back, and the next holder starts from it', async ({
    openAs,
    claimAs,
    jobs,
  }) => {
    const job = await jobs.create(QUEUE, 'Check invoice INV-E2E-DRAFT-KEPT');
    const typed = 'Lines 1 to 3 checked; the total is off by 12.00, asking the supplier.';

    const { page: alice, work } = await claimAs('alice', job);
    await work.notes.fill(typed);
    await expect(alice.getByTestId('draft-status')).toHaveText(/^Draft saved at /);

    await alice.reload();
    await expect(work.notes).toHaveValue(typed);
    await expect(alice.getByTestId('draft-status')).toContainText('is back in the form');
    // Leaving now would drop the draft: the page asks first.
    let asked = '';
    alice.once('dialog', (d) => {
      asked = d.message();
      void d.dismiss();
    });
    await work.releaseButton.click();
    await expect.poll(() => asked).toContain('will not be kept');
    await work.live.waitUntilLive();

    const sam = new SupervisorPage(await openAs('sam'));
    await sam.goto();
    await sam.forceRelease(job.id, 'Needed by the morning shift.');
    await expect(work.ended).toBeVisible();

    // Back in its place, first in line: the next to claim gets it.
    const { page: dana, work: next } = await claimAs('dana', job);
    const kept = dana.getByTestId('drafts');
    await expect(kept.getByRole('heading')).toHaveText('Drafts kept from earlier holders');
    await expect(kept.getByTestId('draft-kept')).toHaveCount(1);
    await expect(kept.getByTestId('draft-kept')).toContainText('alice');
    await expect(kept.getByTestId('draft-kept')).toContainText('kept when sam took the job back');
    await expect(kept.getByTestId('draft-text')).toHaveText(typed);
    await expect(next.notes).toHaveValue('');
    for (const s of SCREENS) {
      await dana.setViewportSize(s.viewport);
      await checkScreen(dana, `the work page with a kept draft (${s.name})`, s.name === 'phone');
    }
    await kept.getByTestId('draft-start').click();
    await expect(next.notes).toHaveValue(typed);
    await expect(dana.getByTestId('draft-status')).toHaveText("The form starts from alice's draft.");
    await next.notes.fill(typed + ' Supplier answered: credit note on its way.');
    await expect(dana.getByTestId('draft-status')).toHaveText(/^Draft saved at /);

    // The supervisor reads both, and the history says when each started.
    await sam.page.goto(`/jobs/${job.id}`);
    const drafts = sam.page.getByTestId('drafts');
    await expect(drafts.getByTestId('draft-live')).toContainText('holds the job now');
    await expect(drafts.getByTestId('draft-live').getByTestId('draft-text')).toContainText('credit note on its way');
    await expect(drafts.getByTestId('draft-kept').getByTestId('draft-text')).toHaveText(typed);
    const history = new WorkPage(sam.page);
    await expect(history.timeline).toContainText('alice started a draft');
    await expect(history.timeline).toContainText('dana started a draft');
    for (const s of SCREENS) {
      await sam.page.setViewportSize(s.viewport);
      await checkScreen(sam.page, `a job's page with drafts (${s.name})`, s.name === 'phone');
    }

    // Completed, the job keeps the draft taken back, not the one done.
    await dana.getByRole('radio', { name: 'Approved' }).check();
    await next.completeButton.click();
    await expect(dana).toHaveURL('/');
    await sam.page.reload();
    await expect(drafts.getByTestId('draft-live')).toHaveCount(0);
    await expect(drafts.getByTestId('draft-kept')).toHaveCount(1);
  });
});
