import { expect, test } from './fixtures';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { WorkPage } from './pages/WorkPage';

// The Team page: who has a page open, what each holds and since when, and
// what each person's reservations came to.

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

  test("counts a job the operator completes in their numbers of today and the week", async ({ openAs, jobs }) => {
    const sam = await openAs('sam');
    await sam.goto('/supervisor/team');
    const row = sam.getByTestId('work-alice');
    const count = async (cell: string) => Number(await row.getByTestId(cell).textContent());
    const [today, week] = [await count('today'), await count('week')];

    const alice = await openAs('alice');
    const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-NUMBERS');
    const home = new OperatorHomePage(alice);
    await home.goto();
    expect(await home.claimNextIn('invoice-review')).toBe(`/jobs/${job.id}`);
    await new WorkPage(alice).complete('counted');

    await sam.reload();
    await expect.poll(() => count('today')).toBe(today + 1);
    expect(await count('week')).toBe(week + 1);
    await expect(row.getByTestId('median')).toHaveText(/\d+(\.\d)? (s|min)/);
  });
});
