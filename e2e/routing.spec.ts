import { expect, test, uniqueTitle } from './fixtures';
import { BASE_URL } from './constants';
import { checkScreen } from './screen';
import { LiveUpdates } from './pages/LiveUpdates';
import { LoginPage } from './pages/LoginPage';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { WorkPage } from './pages/WorkPage';
import { giveReason } from './pages/SupervisorPage';

// Routing as people meet it: a supervisor gives people skills on their
// page; a job asking for a skill nobody here has shows on the Team page;
// the supervisor gives it to someone from the job's page, who finds it
// under "Assigned to me", counted on their card, and claims it.

test.describe('routing', () => {
  test('skills, a job nobody here may take, and one given to a person who claims it', async ({ openAs, browser, playwright }, testInfo) => {
    test.slow(); // a queue, three people and a token made in the browser first
    const salt = uniqueTitle('', testInfo).replace(/[^a-z0-9]/g, '').slice(-10);
    const queue = `e2e-route${salt}`;
    const ines = `e2e-ines${salt}`;
    const otto = `e2e-otto${salt}`;
    const bot = `e2e-route-bot${salt}`;
    const sam = await openAs('sam');

    await sam.goto('/supervisor/queues/new');
    await sam.getByLabel('Name').fill(queue);
    await sam.getByRole('button', { name: 'Create queue' }).click();
    await expect(sam.getByTestId('flash')).toContainText(`Created queue ${queue}`);

    const form = sam.getByTestId('add-person');
    for (const [name, role, skills] of [[ines, 'operator', 'de, vat:3'], [otto, 'operator', ''], [bot, 'producer', '']]) {
      await sam.goto('/supervisor/people');
      await form.getByLabel('Name').fill(name);
      await form.getByLabel('Role').selectOption(role);
      await form.getByLabel(queue, { exact: true }).check();
      await form.getByLabel('Skills').fill(skills);
      if (role === 'operator') await form.getByLabel(/^Password/).fill('e2e-operator-pass');
      await form.getByRole('button', { name: 'Add person' }).click();
      await expect(sam.getByTestId('flash')).toContainText(`Added ${name}`);
    }
    await sam.getByRole('button', { name: 'New API token' }).click();
    const token = (await sam.getByTestId('new-token').locator('code').textContent())?.trim() ?? '';

    // A skill nobody has is refused on the person's page, as typed.
    await sam.goto(`/supervisor/people/${otto}`);
    const edit = sam.getByTestId('edit-person');
    await edit.getByLabel('Skills').fill('fr:9');
    await edit.getByRole('button', { name: 'Save' }).click();
    await expect(sam.getByTestId('person-problem')).toContainText('Skills:');
    await expect(edit.getByLabel('Skills')).toHaveValue('fr:9');
    await checkScreen(sam, "a person's page refusing a skill's level", false);

    const api = await playwright.request.newContext({ baseURL: BASE_URL, extraHTTPHeaders: { Authorization: `Bearer ${token}` } });
    const enqueue = async (title: string, extra: Record<string, unknown>) => {
      const res = await api.post(`/api/v1/queues/${queue}/jobs`, { data: { title, ...extra } });
      expect(res.status(), await res.text()).toBe(201);
      return (await res.json()).job as { id: string };
    };
    const french = await enqueue('Check the invoice from Helios Solar SARL', { skills: ['fr'], priority: 90 });
    await enqueue('Check the invoice from Nordwind GmbH', { skills: ['de'] });
    await enqueue('Check the credit note', {});

    // Nobody has French: the Team page says so first.
    await sam.goto('/supervisor/team');
    await expect(sam.getByTestId('stuck-line').filter({ hasText: queue })).toHaveText([
      `1 job in ${queue} asks for de, which nobody here has. Open the first`,
      `1 job in ${queue} asks for fr, which nobody here has. Open the first`,
    ]);
    await checkScreen(sam, 'the Team page with a job nobody here may take', false);

    // Given to otto, from the job's page, with a reason.
    await sam.goto(`/jobs/${french.id}`);
    await expect(sam.getByTestId('job-skills')).toHaveText('fr');
    await sam.getByTestId('assign-person').selectOption(otto);
    await sam.getByTestId('assign').click();
    expect(await giveReason(sam, 'Otto reads French.')).toBe('Give this job to the person chosen? Only they will be able to claim it.');
    await expect(sam.getByTestId('flash')).toContainText(`waits for ${otto} alone`);
    await expect(sam.getByTestId('job-assignee')).toHaveText(otto);
    await checkScreen(sam, 'a job given to a person, on its page', false);
    await sam.goto(`/jobs/${french.id}`);
    await expect(sam.locator('.timeline')).toContainText(`assigned to ${otto} by sam: Otto reads French.`);

    // otto, on a phone: the job under "Assigned to me", his card counting
    // it and the open job, not the German one; he claims it.
    const context = await browser.newContext({ baseURL: BASE_URL, viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await new LoginPage(page).goto();
    await new LoginPage(page).logIn(otto, 'e2e-operator-pass');
    await expect(new OperatorHomePage(page).heading).toBeVisible();
    const mine = page.getByTestId('assigned-to-me');
    await expect(mine).toContainText('Check the invoice from Helios Solar SARL');
    await expect(page.getByTestId(`queue-${queue}`).getByTestId('ready-count')).toHaveText('2');
    await checkScreen(page, 'the operator home with a job assigned to them, on a phone', true);
    await mine.getByTestId('claim-assigned').click();
    expect(await new WorkPage(page).waitForJob()).toBe(french.id);
    await context.close();
  });

  test('the person chosen to take a job is the one it goes to, though its page is fetched afresh while the reason is asked', async ({ openAs, jobs }) => {
    const sam = await openAs('sam');
    const job = await jobs.create('invoice-review', 'Check the invoice from Lumen Optics', { priority: 0 });
    await sam.goto(`/jobs/${job.id}`);
    await new LiveUpdates(sam).waitUntilLive();
    await sam.getByTestId('assign-person').selectOption('alice');
    await sam.getByTestId('assign').click();
    await expect(sam.getByTestId('reason-dialog')).toBeVisible();
    // A notice names the job meanwhile: the page fetches it afresh, and
    // its form is a new one, which keeps the choice.
    await sam.locator('article.work').evaluate((article) => { article.dataset.fetched = 'before'; });
    await sam.locator('[data-watch-job]').evaluate((watch) => { watch.dispatchEvent(new Event('job-changed')); });
    await expect(sam.locator('article.work')).not.toHaveAttribute('data-fetched', 'before');
    await expect(sam.getByTestId('assign-person')).toHaveValue('alice');
    expect(await giveReason(sam, 'Alice knows Lumen.')).toBe('Give this job to the person chosen? Only they will be able to claim it.');
    await expect(sam.getByTestId('flash')).toContainText('waits for alice alone');
    await expect(sam.getByTestId('job-assignee')).toHaveText('alice');
  });
});
