import type { Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { WorkPage } from './pages/WorkPage';

// alice and carol are both granted invoice-review, a strict-priority queue:
// a fresh priority-100 job is always the head of its line, however long the
// server has been up. (support-escalations, which alice shares with bob,
// ages priorities by 60 s a point, so after five minutes of uptime a seed
// job of priority 95 would outrank a fresh 100 and the race would be about
// a different job.)
const QUEUE = 'invoice-review';
const ROUNDS = 3;

// Each round is a test of its own, with two fresh pages: no round waits on
// a timer of claimdesk's, and one round is a few page loads and clicks.
for (let round = 1; round <= ROUNDS; round++) {
  test(`two operators race for the same job, round ${round}: exactly one gets it`, async ({ openAs, jobs, api }) => {
    const racers = await Promise.all(
      (['alice', 'carol'] as const).map(async (name) => {
        const page = await openAs(name);
        return { name, page, home: new OperatorHomePage(page), work: new WorkPage(page) };
      }),
    );
    const job = await jobs.create(QUEUE, `Check invoice INV-E2E-RACE-${round}`);
    await Promise.all(racers.map((r) => r.home.goto()));
    for (const r of racers) await expect(r.home.claimNextButton(QUEUE)).toBeEnabled();

    // Both click "Claim next" at the same moment.
    const landed = await Promise.all(racers.map((r) => r.home.claimNextIn(QUEUE)));

    const winners = racers.filter((_, i) => landed[i] === `/jobs/${job.id}`);
    expect(winners.map((w) => w.name), `landed on ${landed.join(' and ')}`).toHaveLength(1);
    const [winner] = winners;
    const loser = racers.find((r) => r !== winner)!;

    // The store agrees on who holds it.
    const held = await api.get(job);
    expect(held.state).toBe('reserved');
    expect(held.reserved_by).toBe(winner.name);

    await expect(winner.work.title).toHaveText(job.title);
    await expect(winner.work.countdown).toBeVisible();

    // The loser got another job (the next in line) or was told nothing waits.
    await expectNotHolding(loser.page, loser.work, job.title);
    if (landed[racers.indexOf(loser)].startsWith('/jobs/')) {
      // Hand the seed job back: it keeps its place in line.
      await loser.work.release();
      await expect(loser.home.flash).toContainText('Given back');
    } else {
      await expect(loser.home.flash).toContainText('Nothing is waiting right now.');
    }

    await winner.work.complete(`Won round ${round}`);
    await expect(winner.home.flash).toHaveText(`Completed. Nice work. “${job.title}”`);
    const done = await api.get(job);
    expect(done.state).toBe('completed');
    expect(done.result).toEqual({ notes: `Won round ${round}` });
  });
}

async function expectNotHolding(page: Page, work: WorkPage, title: string) {
  if (new URL(page.url()).pathname.startsWith('/jobs/')) {
    await expect(work.title).toBeVisible();
    await expect(work.title).not.toHaveText(title);
  } else {
    await expect(work.title).toHaveCount(0);
  }
}
