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
    // The page the completion leads to says so (and alice's page is not
    // left mid-navigation for the test's end to close).
    await expect(home.flash).toHaveText(`Completed. Nice work. “${job.title}”`);

    await sam.reload();
    await expect.poll(() => count('today')).toBe(today + 1);
    expect(await count('week')).toBe(week + 1);
    await expect(row.getByTestId('median')).toHaveText(/\d+(\.\d)? (s|min)/);
  });

  test('lists the operators who may work, each on one tight card on a phone', async ({ openAs }) => {
    const sam = await openAs('sam', 'A', { viewport: { width: 390, height: 844 } });
    await sam.goto('/supervisor/team');
    // Supervisors hold no jobs: they are not on the team.
    await expect(sam.getByTestId('member-alice')).toBeVisible();
    await expect(sam.getByTestId('member-sam')).toHaveCount(0);
    await expect(sam.getByTestId('work-sam')).toHaveCount(0);
    // A card with nothing held and no change made shows its name and state
    // alone, side by side.
    const bob = sam.getByTestId('member-bob');
    await expect(bob.getByText('Holding')).toBeHidden();
    // The page refreshes its cards live as others work: a card replaced
    // while measured is measured again.
    await expect
      .poll(async () => {
        const name = await bob.getByRole('link', { name: 'bob' }).boundingBox();
        const state = await bob.getByTestId('status').boundingBox();
        return name && state ? Math.abs(name.y + name.height / 2 - (state.y + state.height / 2)) : null;
      })
      .toBeLessThan(12);
  });
});
