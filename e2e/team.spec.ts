import { expect, test } from './fixtures';
import { OperatorHomePage } from './pages/OperatorHomePage';

// The Team page: who has a page open, what each holds and since when.

test.describe('the team page', () => {
  test('shows an operator with a page open as online, holding the job they claimed', async ({ openAs, jobs }) => {
    const alice = await openAs('alice');
    const home = new OperatorHomePage(alice);
    await home.goto();
    await home.live.waitUntilLive();
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-TEAM');
    expect(await home.claimNextIn('invoice-review')).toBe(`/jobs/${job.id}`);

    const sam = await openAs('sam');
    await sam.goto('/supervisor/team');
    const row = sam.getByTestId('member-alice');
    await expect(row.getByTestId('status')).toHaveText('Online');
    await expect(row.getByTestId('holding').filter({ hasText: job.title })).toContainText('since under a minute');
  });
});
