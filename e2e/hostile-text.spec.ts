import { OperatorApi } from './api';
import { expect, test } from './fixtures';
import { SupervisorPage } from './pages/SupervisorPage';
import { WorkPage } from './pages/WorkPage';

// Text that is hostile to a page but valid: right-to-left scripts, emoji
// made of joined characters, bidi controls and zero-width characters,
// words longer than any line. Titles refuse the invisible formatting
// characters (api/openapi.yaml, Title); payloads are data and keep them. A
// held job's text goes to every supervisor's live feed (the snapshot, the
// notices): it must arrive there as valid UTF-8 JSON, or the browser drops
// the socket and the page says "reconnecting…" for as long as the job is
// held. Text that is not valid UTF-8 never gets that far: the API refuses
// it (internal/handlers, TestRequestBodiesAreStrict).
//
// invoice-review is alice's and carol's queue; a fresh priority-100 job is
// the head of its line.

/** A supervisor's fragments are re-fetched on a notice (debounced 150 ms). */
const SOON = 2_000;

const RLO = '\u202e'; // right-to-left override
const PDF = '\u202c'; // pop directional formatting
const LRE = '\u202a'; // left-to-right embedding
const RLI = '\u2067'; // right-to-left isolate
const PDI = '\u2069'; // pop directional isolate
const RLM = '\u200f'; // right-to-left mark
const ZWSP = '\u200b'; // zero-width space
const ZWJ = '\u200d'; // zero-width joiner
const WJ = '\u2060'; // word joiner
const BOM = '\ufeff'; // zero-width no-break space
const WORD = 'Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichen';

test('a supervisor page stays live while a job with hostile text in its payload is held', async ({ openAs, jobs }) => {
  const samPage = await openAs('sam');
  const sam = new SupervisorPage(samPage);
  const sockets = sam.live.watchSockets();
  await sam.goto();
  await sam.live.waitUntilLive();

  // The title: scripts of both directions, an emoji, a word longer than a
  // line (about 165 characters with the suffix jobs.create adds).
  const job = await jobs.create('invoice-review', `مراجعة الفاتورة 🧾 בדיקת חשבונית ${WORD}${WORD}`, {
    payload: {
      file: `invoice-${RLO}fdp.exe${PDF}`,
      isolated: `${RLI}شركة نوردفيند${PDI} owes 4,812.00 €`,
      hidden: `zero${ZWSP}width${ZWJ}joined${WJ}words${BOM}here${RLM}`,
      emoji: '👩‍💻 🧾 ✅ 🏳️‍🌈 👨‍👩‍👧‍👦',
      rtl: 'مرحبا بالعالم — שלום עולם',
      long: WORD.repeat(40),
      nested: { [`${RLO}key`]: [`${LRE}embedded${PDF}`, `${RLM}marked`] },
    },
  });
  const alice = new OperatorApi((await openAs('alice')).request);
  const claim = await alice.claim('invoice-review');
  expect(claim?.job.id, 'alice holds the hostile job').toBe(job.id);

  // The notice of the claim reaches the page that was already open.
  const row = sam.reservation(job.id);
  await expect(row).toBeVisible({ timeout: SOON });
  await expect(row).toContainText(job.title);
  await sam.live.expectState('live');

  // A page opened now gets the held job, payload and all, in its snapshot.
  const freshPage = await openAs('sam');
  const fresh = new SupervisorPage(freshPage);
  const freshSockets = fresh.live.watchSockets();
  await fresh.goto();
  await fresh.live.waitUntilLive();
  await expect(fresh.reservation(job.id)).toContainText(job.title);

  // Notices keep flowing to both after that: another job of the queue.
  const seen = sockets.framesReceived;
  const freshSeen = freshSockets.framesReceived;
  await jobs.create('invoice-review', 'Check invoice INV-E2E-AFTER-HOSTILE');
  await expect.poll(() => sockets.framesReceived, { timeout: SOON }).toBeGreaterThan(seen);
  await expect.poll(() => freshSockets.framesReceived, { timeout: SOON }).toBeGreaterThan(freshSeen);

  // Still live, on the socket each page opened first: none closed or failed.
  await sam.live.expectState('live');
  await fresh.live.expectState('live');
  expect(sockets).toMatchObject({ opened: 1, closed: 0, errors: [] });
  expect(freshSockets).toMatchObject({ opened: 1, closed: 0, errors: [] });

  // The job's own page shows the payload as text, and is live as well.
  const work = new WorkPage(freshPage);
  const workSockets = work.live.watchSockets();
  await work.goto(job.id);
  await work.live.waitUntilLive();
  await expect(work.title).toHaveText(job.title);
  await expect(work.payload).toContainText('مرحبا بالعالم — שלום עולם');
  await expect(work.payload).toContainText(WORD.repeat(40));
  await expect(work.payload).toContainText(`invoice-${RLO}fdp.exe${PDF}`);
  expect(workSockets).toMatchObject({ opened: 1, closed: 0, errors: [] });
});

test('a title of one word longer than a line breaks inside the supervisor\'s tables: every column stays in view', async ({ openAs, jobs }) => {
  const samPage = await openAs('sam');
  const job = await jobs.create('invoice-review', WORD.repeat(3)); // 174 letters, no space
  await samPage.goto('/supervisor/queues/invoice-review');
  await expect(samPage.getByRole('link', { name: job.title })).toBeVisible();
  const wraps = await samPage.locator('.table-wrap').evaluateAll((els) => els.map((el) => el.scrollWidth - el.clientWidth));
  expect(wraps.length).toBeGreaterThan(0);
  for (const overflow of wraps) expect(overflow, 'a table wider than its box').toBeLessThanOrEqual(1);
});
