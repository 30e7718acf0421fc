import { OperatorApi, ProducerApi, type Batch, type Job } from './api';
import { authFile, BASE_URL, BASE_URL_B, QUEUE_TOKEN, type QueueName } from './constants';
import { expect, test as base, uniqueTitle } from './fixtures';
import { BatchesPage } from './pages/BatchesPage';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { WorkPage } from './pages/WorkPage';

// Batches: one producer request of many jobs, claimed through the normal
// claim in rank order, at most max_concurrent of them reserved at once. The
// supervisor's /supervisor/batches follows each batch live.
//
// invoice-review (seed: lease 600 s, strict priority, no scheduled job due
// during a run) is granted to alice and carol, and billing-bot produces into
// it: a batch's priority-100 jobs are the head of its line. A claim made
// while the batch's slots are all taken gets a seed job (or nothing): that
// one is given back at once and keeps its place in line.

const QUEUE: QueueName = 'invoice-review';
/** The batches table is re-fetched on a notice (debounced 150 ms). */
const SOON = 2_000;

interface BatchFactory {
  /**
   * Creates a batch through billing-bot's API with a unique title built from
   * label and `size` jobs ("<title> #1"…), at priority 100 unless told.
   */
  create(
    label: string,
    options: { size: number; max_concurrent?: number; open?: boolean; priority?: number },
  ): Promise<{ batch: Batch; jobs: Job[] }>;
  /** Adds `size` more jobs to an open batch. */
  add(batch: Batch, size: number): Promise<Job[]>;
}

const test = base.extend<{ batches: BatchFactory }>({
  batches: async ({ api, playwright }, use, testInfo) => {
    const created = new Map<string, { batch: Batch; jobs: Job[] }>();
    const jobsFor = (title: string, from: number, size: number) =>
      Array.from({ length: size }, (_, i) => ({
        title: `${title} #${from + i}`,
        payload: { source: 'e2e', test: testInfo.title },
      }));
    await use({
      async create(label, { size, priority = 100, ...rest }) {
        const title = uniqueTitle(label, testInfo);
        const made = await api.createBatch(QUEUE, { title, priority, ...rest, jobs: jobsFor(title, 1, size) });
        created.set(made.batch.id, { batch: made.batch, jobs: [...made.jobs] });
        return made;
      },
      async add(batch, size) {
        const entry = created.get(batch.id)!;
        const added = await api.addToBatch(batch, jobsFor(batch.title, entry.jobs.length + 1, size));
        entry.jobs.push(...added);
        return added;
      },
    });

    // Leave no priority-100 job behind for a later test to claim: cancel
    // what is not over (its waiting jobs go at once), then have sam cancel
    // the jobs still held, which ends the batch.
    let sam: Awaited<ReturnType<typeof playwright.request.newContext>> | undefined;
    try {
      for (const { batch, jobs } of created.values()) {
        const now = await api.getBatch(batch);
        if (now.finished_at) continue;
        if (now.state === 'open' || now.state === 'sealed') await api.cancelBatch(batch);
        for (const job of jobs) {
          if ((await api.get(job)).state !== 'reserved') continue;
          sam ??= await playwright.request.newContext({ baseURL: BASE_URL, storageState: authFile('sam') });
          const html = await (await sam.get('/supervisor')).text();
          const csrf = html.match(/data-csrf="([^"]+)"/)?.[1];
          if (!csrf) throw new Error('no CSRF token on /supervisor for sam');
          const res = await sam.post(`/supervisor/jobs/${job.id}/cancel`, {
            headers: { 'X-CSRF-Token': csrf },
            maxRedirects: 0,
          });
          expect(res.status(), `cleanup cancel of ${job.id}`).toBe(303);
        }
        expect((await api.getBatch(batch)).finished_at, `cleanup of batch ${batch.id}`).not.toBeNull();
      }
    } finally {
      await sam?.dispose();
    }
  },
});

/**
 * Claims through the API a job that is not one of the batch's, as a third
 * operator would while the batch's slots are taken, and gives it back
 * untouched; returns what was claimed, if anything, for the assertion.
 */
async function claimOutsideBatch(operator: OperatorApi, batch: Batch, batchJobs: Job[]): Promise<Job | null> {
  const claim = await operator.claim(QUEUE);
  if (claim) await operator.release(claim);
  const got = claim?.job ?? null;
  if (got) {
    expect(batchJobs.map((j) => j.id), `claimed ${got.title}`).not.toContain(got.id);
    expect(got.batch_id ?? null).not.toBe(batch.id);
  }
  return got;
}

test('a batch capped at two is followed live to completion; a waiting producer hears of it at once', async ({
  openAs,
  api,
  batches,
  playwright,
}) => {
  // No timer of claimdesk's sets this test's length: each change reaches
  // sam's page by a notice, within SOON, and the producer's wait answers
  // with the last completion. It is long for its work, one story that
  // cannot be cut: three people's pages, some forty actions and checks,
  // and the one second in which the producer's wait must not answer
  // (18 to 25 s of the usual 30 on a busy two-core machine). So three
  // times the usual budget.
  test.slow();
  const { batch, jobs } = await batches.create('Quarter-end invoices', { size: 3, max_concurrent: 2 });
  expect(batch).toMatchObject({ queue: QUEUE, state: 'sealed', total: 3, ready: 3, reserved: 0, max_concurrent: 2 });
  const ids = jobs.map((j) => j.id);

  const sam = new BatchesPage(await openAs('sam'));
  await sam.goto();
  await sam.live.waitUntilLive();
  await expect(sam.row(batch.id)).toHaveAttribute('data-state', 'sealed');
  await expect(sam.row(batch.id)).toContainText(batch.title);
  await expect(sam.state(batch.id)).toHaveText('running');
  await expect(sam.slots(batch.id)).toHaveText('0 / 2');
  await sam.expectProgress(batch.id, { done: 0, total: 3, waiting: 3 });
  await expect(sam.cancelButton(batch.id)).toBeVisible();
  const stillTheSamePage = await sam.live.markDocument();

  // alice claims through her page: a job of the batch, and the page says so.
  const alicePage = await openAs('alice');
  const aliceHome = new OperatorHomePage(alicePage);
  const aliceWork = new WorkPage(alicePage);
  await aliceHome.goto();
  await aliceHome.claimNextIn(QUEUE);
  const first = await aliceWork.waitForJob();
  expect(ids).toContain(first);
  await expect(alicePage.getByTestId('job-batch')).toHaveText(`batch: ${batch.title}`);
  await expect(sam.slots(batch.id)).toHaveText('1 / 2', { timeout: SOON });
  await sam.expectProgress(batch.id, { done: 0, total: 3, inProgress: 1, waiting: 2 });

  // carol claims through the API: the second job of the batch.
  const carolPage = await openAs('carol');
  const carol = new OperatorApi(carolPage.request);
  const second = await carol.claim(QUEUE);
  expect(second, 'carol got a job').not.toBeNull();
  expect(ids).toContain(second!.job.id);
  expect(second!.job.id).not.toBe(first);
  expect(second!.job.batch_id).toBe(batch.id);
  await expect(sam.slots(batch.id)).toHaveText('2 / 2', { timeout: SOON });
  await sam.expectProgress(batch.id, { done: 0, total: 3, inProgress: 2, waiting: 1 });
  await expect(sam.counts(batch.id)).toContainText('2 in progress');
  await expect(sam.counts(batch.id)).toContainText('1 waiting');

  // Both slots are taken: the third job waits, whoever asks.
  const carolHome = new OperatorHomePage(carolPage);
  await carolHome.goto();
  await expect(carolHome.queueCard(QUEUE)).toContainText('1 waiting for a batch slot');
  await claimOutsideBatch(carol, batch, jobs);
  expect(await api.getBatch(batch)).toMatchObject({ state: 'sealed', ready: 1, reserved: 2, completed: 0 });

  // alice completes on her page: a slot frees, and she gets the third job.
  await aliceWork.complete('All three lines match the order.');
  await expect(aliceHome.flash).toHaveText(/^Completed\. Nice work\./);
  await expect(sam.slots(batch.id)).toHaveText('1 / 2', { timeout: SOON });
  await sam.expectProgress(batch.id, { done: 1, total: 3, inProgress: 1, waiting: 1 });
  await aliceHome.claimNextIn(QUEUE);
  const third = await aliceWork.waitForJob();
  expect(ids.filter((id) => id !== first && id !== second!.job.id)).toEqual([third]);
  await expect(alicePage.getByTestId('job-batch')).toHaveText(`batch: ${batch.title}`);
  await expect(sam.slots(batch.id)).toHaveText('2 / 2', { timeout: SOON });
  await sam.expectProgress(batch.id, { done: 1, total: 3, inProgress: 2, waiting: 0 });

  await carol.complete(second!, { verdict: 'Approved' });
  await expect(sam.slots(batch.id)).toHaveText('1 / 2', { timeout: SOON });
  await sam.expectProgress(batch.id, { done: 2, total: 3, inProgress: 1 });
  await expect(sam.counts(batch.id)).toContainText('2 done');
  await expect(sam.state(batch.id)).toHaveText('running');

  // billing-bot waits on the batch through instance B (the completion goes
  // through A); it is still waiting a second later…
  const viaB = await playwright.request.newContext({ baseURL: BASE_URL_B });
  let settled = false;
  const waited = new ProducerApi(viaB).getBatch(batch, { wait: 10 }).finally(() => {
    settled = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(settled, 'the wait returned before the batch ended').toBe(false);

  // …until the last job is completed: from the completion's answer on
  // (the page's typing and clicking before it are not the waiter's time).
  const completed = alicePage.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/complete'));
  await aliceWork.complete('Last one checked.');
  await completed;
  const lastDone = Date.now();
  const finished = await waited;
  expect(Date.now() - lastDone, 'the waiter heard at once, not at the end of its 10 s').toBeLessThan(3_000);
  await viaB.dispose();
  expect(finished).toMatchObject({ state: 'completed', total: 3, completed: 3, ready: 0, reserved: 0 });
  expect(finished.finished_at).not.toBeNull();

  await expect(sam.state(batch.id)).toHaveText('completed', { timeout: SOON });
  await expect(sam.row(batch.id)).toHaveAttribute('data-state', 'completed');
  await sam.expectProgress(batch.id, { done: 3, total: 3 });
  await expect(sam.slots(batch.id)).toHaveText('0 / 2');
  await expect(sam.row(batch.id)).toContainText('ended');
  await expect(sam.cancelButton(batch.id)).toHaveCount(0);
  await stillTheSamePage();
  // alice's last Complete led her page home, which says so (and the test
  // ends on a page that finished loading: closing one mid-navigation can hang).
  await expect(aliceHome.flash).toHaveText(/^Completed\. Nice work\./);
});

test('canceling a batch from the page cancels its waiting jobs; it ends when the job in progress does', async ({
  openAs,
  api,
  batches,
}) => {
  const { batch, jobs } = await batches.create('Supplier onboarding checks', { size: 5, max_concurrent: 1 });

  const sam = new BatchesPage(await openAs('sam'));
  await sam.goto();
  await sam.live.waitUntilLive();
  await expect(sam.slots(batch.id)).toHaveText('0 / 1');

  const alicePage = await openAs('alice');
  const aliceHome = new OperatorHomePage(alicePage);
  const aliceWork = new WorkPage(alicePage);
  await aliceHome.goto();
  await aliceHome.claimNextIn(QUEUE);
  const held = await aliceWork.waitForJob();
  expect(jobs.map((j) => j.id)).toContain(held);
  await expect(alicePage.getByTestId('job-batch')).toHaveText(`batch: ${batch.title}`);
  await expect(sam.slots(batch.id)).toHaveText('1 / 1', { timeout: SOON });
  await sam.expectProgress(batch.id, { done: 0, total: 5, inProgress: 1, waiting: 4 });

  const asked = await sam.cancel(batch.id);
  expect(asked).toContain(batch.title);
  expect(asked).toContain('Its 4 waiting jobs are canceled');
  await expect(sam.flash).toContainText(`Canceled the batch “${batch.title}”.`);
  await expect(sam.flash).toContainText('in progress may still finish');
  await expect(sam.state(batch.id)).toHaveText('canceling');
  await expect(sam.row(batch.id)).toHaveAttribute('data-state', 'canceled');
  await sam.expectProgress(batch.id, { done: 0, total: 5, canceled: 4, inProgress: 1 });
  await expect(sam.counts(batch.id)).toContainText('4 canceled');
  await expect(sam.slots(batch.id)).toHaveText('1 / 1');
  await expect(sam.cancelButton(batch.id)).toHaveCount(0);
  await sam.live.waitUntilLive();
  const stillTheSamePage = await sam.live.markDocument();

  const canceling = await api.getBatch(batch);
  expect(canceling).toMatchObject({ state: 'canceled', canceled: 4, reserved: 1, ready: 0, finished_at: null });
  for (const job of jobs.filter((j) => j.id !== held)) expect((await api.get(job)).state).toBe('canceled');

  // Nobody gets the canceled jobs.
  await claimOutsideBatch(new OperatorApi((await openAs('carol')).request), batch, jobs);

  // alice's reservation was left alone: she finishes, and the batch ends.
  await aliceWork.complete('Done before I heard of the cancel.');
  await expect(aliceHome.flash).toHaveText(/^Completed\. Nice work\./);
  await expect(sam.state(batch.id)).toHaveText('canceled', { timeout: SOON });
  await sam.expectProgress(batch.id, { done: 1, total: 5, canceled: 4 });
  await expect(sam.slots(batch.id)).toHaveText('0 / 1');
  await expect(sam.row(batch.id)).toContainText('ended');
  await stillTheSamePage();

  const ended = await api.getBatch(batch);
  expect(ended).toMatchObject({ state: 'canceled', completed: 1, canceled: 4, reserved: 0, ready: 0 });
  expect(ended.finished_at).not.toBeNull();
});

test('an open batch never completes, however many of its jobs are done, until it is sealed', async ({
  openAs,
  api,
  batches,
  request,
}) => {
  const { batch, jobs } = await batches.create('Vendor statements, arriving in parts', { size: 1, open: true });
  expect(batch).toMatchObject({ state: 'open', total: 1, max_concurrent: null });

  const sam = new BatchesPage(await openAs('sam'));
  await sam.goto();
  await sam.live.waitUntilLive();
  await expect(sam.state(batch.id)).toHaveText('open');
  await expect(sam.row(batch.id)).toHaveAttribute('data-state', 'open');
  await expect(sam.slots(batch.id)).toHaveText('0 / ∞');
  await sam.expectProgress(batch.id, { done: 0, total: 1, waiting: 1 });
  const stillTheSamePage = await sam.live.markDocument();

  const added = await batches.add(batch, 1);
  expect(added).toHaveLength(1);
  expect(added[0].batch_id).toBe(batch.id);
  await sam.expectProgress(batch.id, { done: 0, total: 2, waiting: 2 }, { timeout: SOON });
  const ids = [...jobs, ...added].map((j) => j.id);

  // alice does one on her page, carol the other through the API.
  const alicePage = await openAs('alice');
  const aliceHome = new OperatorHomePage(alicePage);
  const aliceWork = new WorkPage(alicePage);
  await aliceHome.goto();
  await aliceHome.claimNextIn(QUEUE);
  const first = await aliceWork.waitForJob();
  expect(ids).toContain(first);
  await expect(alicePage.getByTestId('job-batch')).toHaveText(`batch: ${batch.title}`);
  await aliceWork.complete('Statement part 1 reconciled.');
  await expect(aliceHome.flash).toHaveText(/^Completed\. Nice work\./);

  const carol = new OperatorApi((await openAs('carol')).request);
  const second = await carol.claim(QUEUE);
  expect(second, 'carol got a job').not.toBeNull();
  expect(ids.filter((id) => id !== first)).toEqual([second!.job.id]);
  await carol.complete(second!, { verdict: 'Approved', amount_to_pay: 1188 });

  await sam.expectProgress(batch.id, { done: 2, total: 2 }, { timeout: SOON });
  await expect(sam.state(batch.id)).toHaveText('open');
  await expect(sam.row(batch.id)).not.toContainText('ended');
  await expect(sam.cancelButton(batch.id)).toBeVisible();
  // A producer waiting on it is not told it ended: more jobs may come.
  const stillOpen = await api.getBatch(batch, { wait: 1 });
  expect(stillOpen).toMatchObject({ state: 'open', total: 2, completed: 2, finished_at: null });
  await expect(sam.state(batch.id)).toHaveText('open');

  // Sealed with every job done, it is complete at once.
  const sealed = await api.sealBatch(batch);
  expect(sealed.state).toBe('completed');
  expect(sealed.finished_at).not.toBeNull();
  await expect(sam.state(batch.id)).toHaveText('completed', { timeout: SOON });
  await expect(sam.row(batch.id)).toHaveAttribute('data-state', 'completed');
  await expect(sam.row(batch.id)).toContainText('ended');
  await expect(sam.cancelButton(batch.id)).toHaveCount(0);
  await stillTheSamePage();

  // A sealed batch takes no more jobs.
  const late = await request.post(`/api/v1/batches/${batch.id}/jobs`, {
    headers: { Authorization: `Bearer ${QUEUE_TOKEN[QUEUE]}` },
    data: { jobs: [{ title: `${batch.title} #3` }] },
  });
  expect(late.status()).toBe(409);
  expect((await late.json()).error.code).toBe('invalid_state');
});
