import { mkdirSync } from 'node:fs';
import type { Page } from '@playwright/test';
import { failUntilDead, OperatorApi } from './api';
import { giveReason } from './pages/SupervisorPage';
import { expect, test } from './fixtures';
import { checkScreen, SCREENS } from './screen';

// A supervisor reviews a queue's finished work: newest first, who did it
// and what it came to, found by person and time, dead jobs requeued a
// ticked few at a time; a job's page leads to its queue, a batch's row to
// its jobs.

const QUEUE = 'address-verification';
/** Where the screenshots of the lists go, to look at. */
const SHOTS = process.env.SHOTS_DIR;

/** Saves a screenshot of the list's filter and first rows when asked to (SHOTS_DIR). */
async function shot(page: Page, name: string) {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.getByTestId('job-filter').evaluate((el) => el.scrollIntoView());
  await page.screenshot({ path: `${SHOTS}/${name}.png` });
}

/** The rows of the queue page's job list. */
const rows = (page: Page) => page.getByTestId('jobs').locator('tbody tr');

test.describe('review', () => {
  test('completed jobs come newest first with who and what, and are found by person and time, kept in the address', async ({
    openAs,
    jobs,
  }) => {
    test.setTimeout(180_000); // both screens, each checked twice
    const carol = new OperatorApi((await openAs('carol')).request);
    const done = [];
    for (const [label, verdict] of [['Verify address: Rue de Rivoli 1, Paris', 'valid'], ['Verify address: Via Roma 9, Torino', 'moved']]) {
      const job = await jobs.create(QUEUE, label);
      const claim = await carol.claim(QUEUE);
      expect(claim?.job.id).toBe(job.id);
      await carol.complete(claim!, { verdict, note: 'Checked against the land register and the tenant list; '.repeat(4) });
      done.push(job);
    }

    for (const screen of SCREENS) {
      const phone = screen.name === 'phone';
      const sam = await openAs('sam', 'A', { viewport: screen.viewport, locale: 'en-US', timezoneId: 'Europe/Zurich' });
      await sam.goto(`/supervisor/queues/${QUEUE}?state=completed`);
      const first = rows(sam).first();
      await expect(first).toContainText(done[1].title);
      await expect(first.getByTestId('finished-by')).toHaveText('carol');
      await expect(first.getByTestId('finished-at')).toHaveText(/ago$/);
      await expect(first.getByTestId('outcome')).toContainText('Verdict: moved · Note: Checked against');
      await expect(first.getByTestId('outcome')).toContainText('…');
      await expect(rows(sam).nth(1)).toContainText(done[0].title);
      await checkScreen(sam, 'completed, newest first', phone);
      await shot(sam, `completed-${screen.viewport.width}`);

      // carol's, finished today in the viewer's zone: in the address, so a
      // reload keeps them.
      await sam.getByLabel('Completed by').fill('carol');
      await sam.getByTestId('when').selectOption('today');
      await sam.getByRole('button', { name: 'Find' }).click();
      await expect(sam).toHaveURL(/person=carol/);
      await expect(sam).toHaveURL(/when=today/);
      await expect(sam).toHaveURL(/tz=Europe%2FZurich/);
      await sam.reload();
      await expect(sam.getByTestId('when')).toHaveValue('today');
      await expect(sam.getByLabel('Completed by')).toHaveValue('carol');
      await expect(rows(sam).first()).toContainText(done[1].title);
      await shot(sam, `completed-filtered-${screen.viewport.width}`);

      // Oldest first: the day before's work leads.
      await sam.getByTestId('order').selectOption('asc');
      await sam.getByRole('button', { name: 'Find' }).click();
      await expect(sam).toHaveURL(/order=asc/);
      await expect(rows(sam).first()).not.toContainText(done[1].title);

      // A range where nothing finished says so.
      await sam.goto(`/supervisor/queues/${QUEUE}?state=completed&from=2001-01-01T00%3A00&to=2001-01-02T00%3A00`);
      await expect(sam.getByTestId('no-jobs')).toHaveText('No completed jobs match.');
      await checkScreen(sam, 'completed, none in the range', phone);
      await shot(sam, `completed-empty-${screen.viewport.width}`);
    }
  });

  test('dead jobs ticked are requeued at once, with the reason in their history', async ({ openAs, jobs, api }) => {
    const queue = 'content-moderation'; // three attempts
    // A failed job is not offered back to its reporter: three people fail it.
    const ops = [];
    for (const name of ['bob', 'carol', 'dana'] as const) ops.push(new OperatorApi((await openAs(name)).request));
    const dead = [];
    for (const label of ['Image will not load', 'Video link expired']) {
      const job = await jobs.create(queue, label);
      await failUntilDead(ops, job, (attempt) => `Attempt ${attempt}: the file answers 404`);
      dead.push(job);
    }

    const sam = await openAs('sam', 'A', { viewport: { width: 390, height: 844 } });
    await sam.goto(`/supervisor/queues/${queue}?state=dead`);
    const row = rows(sam).filter({ hasText: dead[1].title });
    await expect(row.getByTestId('finished-by')).toHaveText('dana');
    await expect(row.getByTestId('outcome')).toHaveText('Attempt 3: the file answers 404');
    for (const job of dead) await sam.getByRole('checkbox', { name: `Select ${job.title}` }).check();
    await checkScreen(sam, 'dead, two ticked', true);
    await shot(sam, 'dead-ticked-390');
    // The reason box asks the requeue's own question, and the form goes to
    // the requeue, not to the cancel the form sends by default.
    await sam.getByTestId('requeue-selected').click();
    expect(await giveReason(sam, 'The files were uploaded again')).toBe('Put the selected jobs back in line with fresh attempts?');
    await expect(sam.getByTestId('flash')).toHaveText('Requeued 2 jobs with fresh attempts.');
    for (const job of dead) expect((await api.get(job)).state).toBe('ready');
    const history = await (await sam.request.get(`/api/v1/jobs/${dead[0].id}/history`)).json();
    expect(history.history.at(-1)).toMatchObject({ action: 'requeued', actor: 'sam', reason: 'The files were uploaded again' });
    for (const job of dead) await api.cancel(job);
  });

  test("a job's page leads a supervisor to its queue, and a batch's row to its jobs", async ({ openAs, api }) => {
    const { batch, jobs } = await api.createBatch(QUEUE, {
      title: 'Review addresses of new tenants',
      jobs: [{ title: 'Verify address: Kungsgatan 4, Stockholm' }],
    });
    try {
      const sam = await openAs('sam');
      await sam.goto(`/jobs/${jobs[0].id}`);
      await sam.getByTestId('job-queue').click();
      await expect(sam).toHaveURL(`/supervisor/queues/${QUEUE}`);

      await sam.goto('/supervisor/batches');
      const row = sam.getByTestId(`batch-${batch.id}`);
      await expect(row.getByTestId('batch-id')).toHaveText(batch.id);
      await row.getByTestId('batch-jobs').click();
      await expect(sam).toHaveURL(/batch=/);
      await expect(rows(sam)).toHaveCount(1);
      await expect(rows(sam).first()).toContainText('Verify address: Kungsgatan 4, Stockholm');
    } finally {
      await api.cancelBatch(batch);
    }
  });
});
