import { expect, test, uniqueTitle } from './fixtures';
import { BASE_URL } from './constants';
import { checkScreen } from './screen';
import { LoginPage } from './pages/LoginPage';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { WorkPage } from './pages/WorkPage';

// Due times as people meet them: a supervisor gives a queue an SLA in its
// settings; its jobs come at risk and overdue within a cron tick; the
// operator's card, Supervise, the queue's lists and the work page say so;
// a queue that claims earliest due first hands out the overdue job first.

test.describe('due times', () => {
  test('a queue with an SLA shows its jobs at risk and overdue, and claims the earliest due first', async ({ openAs, browser, playwright }, testInfo) => {
    test.slow(); // a queue, two people and a token made in the browser first
    const salt = uniqueTitle('', testInfo).replace(/[^a-z0-9]/g, '').slice(-10);
    const queue = `e2e-due${salt}`;
    const operator = `e2e-due-op${salt}`;
    const bot = `e2e-due-bot${salt}`;
    const sam = await openAs('sam');

    await sam.goto('/supervisor/queues/new');
    await sam.getByLabel('Name').fill(queue);
    await sam.getByLabel(/^Due after/).fill('30d');
    await sam.getByLabel(/^At risk after/).fill('1');
    await sam.getByLabel('Claim order').selectOption('due');
    await sam.getByLabel(/^Priority when overdue/).fill('90');
    await sam.getByRole('button', { name: 'Create queue' }).click();
    await expect(sam.getByTestId('flash')).toContainText(`Created queue ${queue}`);
    await expect(sam.getByLabel(/^Due after/)).toHaveValue('30d');
    await expect(sam.getByLabel('Claim order')).toHaveValue('due');

    // A share of the way that is no percentage is not sent.
    await sam.getByLabel(/^At risk after/).fill('0');
    expect(await sam.getByLabel(/^At risk after/).evaluate((el) => (el as HTMLInputElement).checkValidity())).toBe(false);

    const form = sam.getByTestId('add-person');
    for (const [name, role] of [[operator, 'operator'], [bot, 'producer']]) {
      await sam.goto('/supervisor/people');
      await form.getByLabel('Name').fill(name);
      await form.getByLabel('Role').selectOption(role);
      await form.getByLabel(queue, { exact: true }).check();
      if (role === 'operator') await form.getByLabel(/^Password/).fill('e2e-operator-pass');
      await form.getByRole('button', { name: 'Add person' }).click();
      await expect(sam.getByTestId('flash')).toContainText(`Added ${name}`);
    }
    await sam.getByRole('button', { name: 'New API token' }).click();
    const token = (await sam.getByTestId('new-token').locator('code').textContent())?.trim() ?? '';

    // Overdue from the start, at risk a second after it comes (1% of 100
    // s), and on time (the queue's 30 days: 7 hours to its warn point).
    const api = await playwright.request.newContext({ baseURL: BASE_URL, extraHTTPHeaders: { Authorization: `Bearer ${token}` } });
    const enqueue = async (title: string, extra: Record<string, unknown>) => {
      const res = await api.post(`/api/v1/queues/${queue}/jobs`, { data: { title, priority: 50, ...extra } });
      expect(res.status(), await res.text()).toBe(201);
      return (await res.json()).job as { id: string; due_at: string; sla: string };
    };
    const onTime = await enqueue('Call back about the invoice', { priority: 100 });
    const overdue = await enqueue('Answer the complaint', { due_at: new Date(Date.now() - 60_000).toISOString() });
    const soon = await enqueue('Confirm the refund', { due_in_seconds: 100 });
    expect(onTime.sla).toBe('on_time');
    expect(Date.parse(onTime.due_at) - Date.now()).toBeGreaterThan(29 * 24 * 3600_000);
    const standing = async (id: string) => {
      const res = await api.get(`/api/v1/jobs/${id}`);
      return ((await res.json()) as { sla: string; priority: number });
    };
    await expect.poll(async () => (await standing(soon.id)).sla).toBe('at_risk');
    await expect.poll(async () => (await standing(overdue.id)).priority).toBe(90);
    expect((await standing(overdue.id)).sla).toBe('breached');
    const listed = await api.get(`/api/v1/jobs?queue=${queue}&sla=breached`);
    expect(listed.status()).toBe(403); // a producer lists nothing; supervisors do
    await api.dispose();

    // Supervise: the queue's row, each count a link to its list.
    await sam.goto('/supervisor');
    const row = sam.getByTestId(`stats-${queue}`);
    await expect(row.getByTestId('at-risk')).toHaveText('1 at risk');
    await expect(row.getByTestId('breached')).toHaveText('1 overdue');
    await checkScreen(sam, 'Supervise with jobs at risk and overdue', false);
    await row.getByTestId('breached').click();
    await expect(sam.getByTestId('tab-breached')).toHaveAttribute('aria-current', 'page');
    const jobs = sam.getByTestId('jobs');
    await expect(jobs.getByRole('link')).toHaveText(['Answer the complaint']);
    await expect(jobs.getByTestId('job-due')).toContainText('overdue by');
    await sam.getByTestId('tab-at_risk').click();
    await expect(jobs.getByRole('link')).toHaveText(['Confirm the refund']);
    await expect(jobs.getByTestId('job-due')).toContainText('due in');

    // The operator's card, and a claim: the overdue job first, though the
    // job on time has the higher priority.
    const context = await browser.newContext({ baseURL: BASE_URL, viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await new LoginPage(page).goto();
    await new LoginPage(page).logIn(operator, 'e2e-operator-pass');
    await expect(new OperatorHomePage(page).heading).toBeVisible();
    const card = page.getByTestId(`queue-${queue}`);
    await expect(card.getByTestId('at-risk')).toHaveText('1 at risk');
    await expect(card.getByTestId('breached')).toHaveText('1 overdue');
    await checkScreen(page, 'the operator home with jobs at risk and overdue, on a phone', true);
    await card.getByRole('button', { name: `Claim next from ${queue}`, exact: true }).click();
    const work = new WorkPage(page);
    expect(await work.waitForJob()).toBe(overdue.id);
    await expect(page.getByTestId('job-due')).toContainText('overdue by');
    await checkScreen(page, 'the work page of an overdue job, on a phone', true);

    // Completed after its due time: the queue's day so far is 0% on time,
    // and the person's share on the Team page says the same.
    await work.completeButton.click();
    await expect(page.getByTestId('flash')).toContainText('Completed');
    await context.close();
    await sam.goto('/supervisor');
    await expect(row.getByTestId('attainment')).toHaveText('0% on time today');
    await expect(row.getByTestId('breached')).toHaveCount(0);
    await sam.goto('/supervisor/team');
    await expect(sam.getByTestId(`work-${operator}`).getByTestId('on-time')).toHaveText('0% of 1');
  });

  test('an overdue job moves to the breach queue, and its old link leads there', async ({ openAs, playwright }, testInfo) => {
    test.slow(); // two queues, a person and a token made in the browser first
    const salt = uniqueTitle('', testInfo).replace(/[^a-z0-9]/g, '').slice(-10);
    const queue = `e2e-esc${salt}`;
    const leads = `e2e-leads${salt}`;
    const bot = `e2e-esc-bot${salt}`;
    const sam = await openAs('sam');
    for (const name of [leads, queue]) {
      await sam.goto('/supervisor/queues/new');
      await sam.getByLabel('Name').fill(name);
      if (name === queue) await sam.getByLabel(/^Move overdue jobs to/).selectOption(leads);
      await sam.getByRole('button', { name: 'Create queue' }).click();
      await expect(sam.getByTestId('flash')).toContainText(`Created queue ${name}`);
    }
    await expect(sam.getByLabel(/^Move overdue jobs to/)).toHaveValue(leads);
    await sam.getByTestId('due-settings').scrollIntoViewIfNeeded();
    await checkScreen(sam, 'the due time settings of a queue whose overdue jobs move on', false);

    const form = sam.getByTestId('add-person');
    await sam.goto('/supervisor/people');
    await form.getByLabel('Name').fill(bot);
    await form.getByLabel('Role').selectOption('producer');
    await form.getByLabel(queue, { exact: true }).check();
    await form.getByRole('button', { name: 'Add person' }).click();
    await expect(sam.getByTestId('flash')).toContainText(`Added ${bot}`);
    await sam.getByRole('button', { name: 'New API token' }).click();
    const token = (await sam.getByTestId('new-token').locator('code').textContent())?.trim() ?? '';

    // Overdue as it comes: within a cron tick it moves, and its producer,
    // granted only the first queue, follows its old id to it.
    const api = await playwright.request.newContext({ baseURL: BASE_URL, extraHTTPHeaders: { Authorization: `Bearer ${token}` } });
    const res = await api.post(`/api/v1/queues/${queue}/jobs`, { data: { title: 'Answer the escalation', due_at: new Date(Date.now() - 60_000).toISOString() } });
    expect(res.status(), await res.text()).toBe(201);
    const old = ((await res.json()).job as { id: string }).id;
    const moved = old.replace(`.${queue}`, `.${leads}`);
    await expect.poll(async () => ((await (await api.get(`/api/v1/jobs/${old}`)).json()) as { id: string }).id).toBe(moved);
    const job = (await (await api.get(`/api/v1/jobs/${old}`)).json()) as { moved_from: string; sla: string; state: string };
    expect(job).toMatchObject({ moved_from: queue, sla: 'breached', state: 'ready' });
    await api.dispose();

    // The old link opens the job where it is, its history saying how.
    await sam.goto(`/jobs/${old}`);
    await expect(sam).toHaveURL(new RegExp(`/jobs/${moved.replace('.', '\\.')}$`));
    await expect(sam.getByText(`moved here from ${queue}, overdue`)).toBeVisible();
    await checkScreen(sam, 'a job that moved to the breach queue when overdue', false);
  });
});
