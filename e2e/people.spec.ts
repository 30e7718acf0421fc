import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { BASE_URL, BASE_URL_B, RUN_DIR } from './constants';
import { expect, test } from './fixtures';
import { LoginPage } from './pages/LoginPage';

// Changes to people made on the command line reach pages already open, on
// every instance: the command tells the instances, each closes the person's
// websockets, and the pages reload into the login page.

const claimdesk = path.join(__dirname, '..', 'bin', 'claimdesk');

/** Runs an admin command against the suite's store. */
function admin(args: string[], input = ''): string {
  return execFileSync(claimdesk, args, { cwd: RUN_DIR, input, encoding: 'utf8' });
}

test('a person disabled from the command line is sent to the login page at once, on both instances', async ({
  browser,
}) => {
  const name = `dana${Date.now() % 1_000_000}`;
  admin(['user', 'add', name, '--role', 'operator', '--queues', 'invoice-review', '--password-stdin'], 'dana-e2e-pass\n');

  const context = await browser.newContext({ baseURL: BASE_URL });
  const onA = await context.newPage();
  const login = new LoginPage(onA);
  await login.goto();
  await login.logIn(name, 'dana-e2e-pass');
  await expect(onA.getByTestId('current-user')).toContainText(name);
  // The same browser on the other instance: cookies do not depend on the port.
  const onB = await context.newPage();
  await onB.goto(`${BASE_URL_B}/`);
  for (const page of [onA, onB]) {
    await expect(page.getByTestId('live')).toHaveAttribute('data-state', 'live');
  }

  admin(['user', 'disable', name]);
  for (const page of [onA, onB]) {
    await expect(page).toHaveURL(/\/login/, { timeout: 5_000 });
    await expect(page.getByLabel('Name')).toBeVisible();
  }
  // Enabled again, the person logs in anew: the old session stays ended.
  admin(['user', 'enable', name]);
  await onA.goto('/');
  await expect(onA).toHaveURL(/\/login/);
  await context.close();
});

test('adding a person with a taken name says so where the supervisor is taken, on a phone too, and keeps what was typed', async ({ openAs }) => {
  const sam = await openAs('sam', 'A', { viewport: { width: 390, height: 844 } });
  await sam.goto('/supervisor/people');
  const form = sam.getByTestId('add-person');
  await form.getByLabel('Name').fill('alice');
  await form.getByLabel(/^Password/).fill('a-long-enough-pass');
  await form.getByRole('button', { name: 'Add person' }).click();
  const problem = sam.getByTestId('person-problem');
  await expect(problem).toContainText('alice');
  await expect(problem).toBeFocused();
  await expect(problem).toBeInViewport();
  await expect(form.getByLabel('Name')).toHaveValue('alice');
});
