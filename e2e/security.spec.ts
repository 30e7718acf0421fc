import { expect, test } from './fixtures';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { SupervisorPage } from './pages/SupervisorPage';
import { WorkPage } from './pages/WorkPage';

const SCRIPT = '<script>window.__xss=1</script>';
const IMG = '<img src=x onerror="window.__xss=1">';

test('a job with HTML in its title and payload is shown as text', async ({ openAs, jobs }) => {
  const job = await jobs.create('address-verification', `${SCRIPT}${IMG}`, {
    payload: {
      comment: `${SCRIPT} and ${IMG}`,
      author: { display_name: IMG },
      tags: [SCRIPT, 'plain'],
    },
  });

  const carol = await openAs('carol');
  // Had anything been parsed as markup, the browser would fetch "x" or
  // report a blocked inline script (the CSP forbids them).
  const fetched: string[] = [];
  const cspReports: string[] = [];
  carol.on('request', (r) => fetched.push(new URL(r.url()).pathname));
  carol.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspReports.push(m.text());
  });

  const home = new OperatorHomePage(carol);
  await home.goto();
  await home.claimNextIn('address-verification');
  const work = new WorkPage(carol);
  expect(await work.waitForJob()).toBe(job.id);

  await expect(work.title).toHaveText(job.title);
  await expect(carol).toHaveTitle(`${job.title} · claimdesk`);
  await expect(work.payload).toContainText(`${SCRIPT} and ${IMG}`);
  await expect(work.payload).toContainText(IMG);
  await expect(work.payload).toContainText(SCRIPT);
  await expect(work.payload.getByRole('img')).toHaveCount(0);
  await expect(carol.getByRole('main').getByRole('img')).toHaveCount(0);
  expect(await carol.evaluate(() => (window as unknown as { __xss?: unknown }).__xss)).toBeUndefined();

  // The flash that names the job is text too.
  await work.release();
  await expect(home.flash).toHaveText(`Given back: it keeps its place in line. “${job.title}”`);
  expect(await carol.evaluate(() => (window as unknown as { __xss?: unknown }).__xss)).toBeUndefined();

  // So is the supervisor's list of the queue.
  const samPage = await openAs('sam');
  const sam = new SupervisorPage(samPage);
  await sam.gotoQueue('address-verification', 'ready');
  await expect(sam.jobRow(job.id).getByRole('link', { name: job.title, exact: true })).toBeVisible();
  await expect(sam.jobRow(job.id).getByRole('img')).toHaveCount(0);
  expect(await samPage.evaluate(() => (window as unknown as { __xss?: unknown }).__xss)).toBeUndefined();

  expect(fetched.filter((p) => p.endsWith('/x'))).toEqual([]);
  expect(cspReports).toEqual([]);
});

test('a form POST without the CSRF token is refused', async ({ openAs, jobs, api }) => {
  // carol's queues all have strict priority: her claim takes this job.
  const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-CSRF');
  const carol = await openAs('carol');
  await new OperatorHomePage(carol).goto();

  // page.request shares the browser context's cookies: the session rides along.
  const without = await carol.request.post('/claim', { maxRedirects: 0 });
  expect(without.status()).toBe(403);
  expect(await without.text()).toContain('the form was stale or forged');

  const forged = await carol.request.post('/claim', { form: { _csrf: 'forged-token' }, maxRedirects: 0 });
  expect(forged.status()).toBe(403);
  expect((await api.get(job)).state).toBe('ready');

  const csrf = await carol.evaluate(() => document.body.dataset.csrf);
  expect(csrf).toBeTruthy();
  const withToken = await carol.request.post('/claim', { form: { _csrf: csrf! }, maxRedirects: 0 });
  expect(withToken.status()).not.toBe(403);
  expect(withToken.status()).toBe(303);
  expect(withToken.headers()['location']).toBe(`/jobs/${job.id}`);

  const claimed = await api.get(job);
  expect(claimed.state).toBe('reserved');
  expect(claimed.reserved_by).toBe('carol');
});

test('the supervisor page refuses an action without the CSRF token', async ({ openAs, jobs, api }) => {
  const job = await jobs.create('invoice-review', 'Check invoice INV-E2E-CSRF-SUPERVISOR');
  const sam = await openAs('sam');
  await new SupervisorPage(sam).goto();

  const res = await sam.request.post(`/supervisor/jobs/${job.id}/cancel`, { maxRedirects: 0 });
  expect(res.status()).toBe(403);
  expect((await api.get(job)).state).toBe('ready');
});
