import type { Page } from '@playwright/test';
import { BASE_URL } from './constants';
import { expect, test, uniqueTitle } from './fixtures';
import { LoginPage } from './pages/LoginPage';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { giveReason } from './pages/SupervisorPage';
import { WorkPage } from './pages/WorkPage';
import { checkScreen } from './screen';

// A supervisor runs queues from the browser: pausing one stops claims on
// every operator page that shows it, at once and without a reload.
//
// address-verification is granted to carol alone among the operators.

/** Notices reach an open page within this. */
const AT_ONCE = 1_000;
const QUEUE = 'address-verification';

/** Presses a queue's pause, resume button on its page as sam, accepting the confirmation. */
async function press(sam: Page, action: 'pause' | 'resume') {
  await sam.goto(`/supervisor/queues/${QUEUE}`);
  sam.once('dialog', (d) => d.accept());
  await sam.getByTestId(`queue-${action}`).getByRole('button').click();
  await expect(sam.getByTestId('flash')).toContainText(action === 'pause' ? `Paused ${QUEUE}` : `Resumed ${QUEUE}`);
}

test.describe('queues', () => {
  test('Cancel selected with nothing ticked says so and sends nothing; with a job ticked it asks, then cancels it', async ({ openAs, jobs, api }) => {
    const job = await jobs.create(QUEUE, 'Verify address: Unter den Linden 77, Berlin');
    const sam = await openAs('sam');
    await sam.goto(`/supervisor/queues/${QUEUE}`);
    const cancel = sam.getByTestId('cancel-selected').getByRole('button', { name: 'Cancel selected' });
    const said: string[] = [];
    sam.once('dialog', (d) => { said.push(d.message()); void d.accept(); });
    await cancel.click();
    await expect.poll(() => said.length).toBe(1);
    expect(said[0]).toBe('Tick the jobs to cancel first.');
    await expect(sam).toHaveURL(`/supervisor/queues/${QUEUE}`);
    expect((await api.get(job)).state).toBe('ready');

    await sam.getByRole('checkbox', { name: `Select ${job.title}` }).check();
    await cancel.click();
    expect(await giveReason(sam)).toContain('Cancel the selected jobs for good?');
    // The page the form's answer leads to says so (and the test ends on a
    // page that finished loading: closing one mid-navigation can hang).
    await expect(sam.getByTestId('flash')).toContainText('Canceled 1 job.');
    await expect.poll(async () => (await api.get(job)).state).toBe('canceled');
  });

  test('pausing a queue stops claims on the operator page at once; resuming brings them back', async ({ openAs, jobs }) => {
    const sam = await openAs('sam');
    const carol = await openAs('carol');
    const home = new OperatorHomePage(carol);
    await home.goto();
    await home.live.waitUntilLive();
    const job = await jobs.create(QUEUE, 'Verify address: Karl-Marx-Allee 1, Berlin');
    await expect(home.claimNextButton(QUEUE)).toBeEnabled({ timeout: AT_ONCE });
    const stillTheSamePage = await home.live.markDocument();

    try {
      await press(sam, 'pause');
      await expect(sam.getByTestId('paused-note')).toBeVisible();

      const card = home.queueCard(QUEUE);
      await expect(home.claimNextButton(QUEUE)).toBeDisabled({ timeout: AT_ONCE });
      await expect(card.getByTestId('paused')).toHaveText('Paused', { timeout: 2 * AT_ONCE });
      await stillTheSamePage();
      await checkScreen(carol, 'home with a paused queue', false);
      await checkScreen(sam, 'a paused queue\'s page', false);

      // A job added meanwhile counts, but pops no toast to claim it by.
      // (Its notice comes before the counts that include it: once the
      // count shows it, the page has decided on a toast.)
      const before = await home.readyCountNow(QUEUE);
      const late = await jobs.create(QUEUE, 'Verify address: Calle de Alcalá 1, Madrid');
      await expect(home.readyCount(QUEUE)).toHaveText(String(before + 1), { timeout: AT_ONCE });
      await expect(home.toastFor(late.title)).toHaveCount(0);
    } finally {
      await press(sam, 'resume');
    }
    await home.goto();
    await expect(home.queueCard(QUEUE).getByTestId('paused')).toHaveCount(0);
    await expect(home.claimNextButton(QUEUE)).toBeEnabled();
    expect(await home.claimNextIn(QUEUE)).toBe(`/jobs/${job.id}`);
  });

  test('a supervisor makes a queue and an operator in the browser; the operator logs in and claims there', async ({
    openAs,
    browser,
    playwright,
  }, testInfo) => {
    const salt = uniqueTitle('', testInfo).replace(/[^a-z0-9]/g, '').slice(-10);
    const queue = `e2e-q${salt}`;
    const operator = `e2e-op${salt}`;
    const bot = `e2e-bot${salt}`;
    const sam = await openAs('sam');

    await sam.goto('/supervisor/queues/new');
    await sam.getByLabel('Name').fill(queue);
    await sam.getByLabel(/^Lease/).fill('15m');
    await sam.getByRole('button', { name: 'Create queue' }).click();
    await expect(sam.getByTestId('flash')).toContainText(`Created queue ${queue}`);

    // The same name again is refused, in words, and nothing is lost.
    await sam.goto('/supervisor/queues/new');
    await sam.getByLabel('Name').fill(queue);
    await sam.getByRole('button', { name: 'Create queue' }).click();
    await expect(sam.getByRole('alert')).toContainText(`A queue named ${queue} already exists`);
    await checkScreen(sam, 'the new queue form, refused', false);

    const addPerson = async (name: string, role: string, password: string, queues: string[]) => {
      await sam.goto('/supervisor/people');
      const form = sam.getByTestId('add-person');
      await form.getByLabel('Name').fill(name);
      await form.getByLabel('Role').selectOption(role);
      if (role === 'producer' && queues.length === 0) await form.getByTestId('grant-all').check();
      for (const q of queues) await form.getByLabel(q, { exact: true }).check();
      if (password) await form.getByLabel(/^Password/).fill(password);
      await form.getByRole('button', { name: 'Add person' }).click();
      await expect(sam.getByTestId('flash')).toContainText(`Added ${name}`);
    };
    await addPerson(operator, 'operator', 'e2e-operator-pass', [queue]);
    await addPerson(bot, 'producer', '', []);
    await sam.getByRole('button', { name: 'New API token' }).click();
    const token = (await sam.getByTestId('new-token').locator('code').textContent())?.trim() ?? '';
    expect(token).toMatch(/^cdt_/);

    const api = await playwright.request.newContext({ baseURL: BASE_URL, extraHTTPHeaders: { Authorization: `Bearer ${token}` } });
    const title = `First job of ${queue}`;
    const res = await api.post(`/api/v1/queues/${queue}/jobs`, { data: { title, payload: { n: 1 } } });
    expect(res.status()).toBe(201);
    await api.dispose();

    const context = await browser.newContext({ baseURL: BASE_URL });
    const page = await context.newPage();
    const login = new LoginPage(page);
    await login.goto();
    await login.logIn(operator, 'e2e-operator-pass');
    const home = new OperatorHomePage(page);
    await expect(home.heading).toBeVisible();
    await expect(page.getByTestId(`queue-${queue}`)).toBeVisible();
    await page.getByTestId(`queue-${queue}`).getByRole('button', { name: `Claim next from ${queue}`, exact: true }).click();
    const work = new WorkPage(page);
    await work.waitForJob();
    await expect(work.title).toHaveText(title);
    await context.close();
  });
});
