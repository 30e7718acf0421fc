import { PEOPLE } from './constants';
import { expect, test } from './fixtures';
import { LoginPage } from './pages/LoginPage';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { SupervisorPage } from './pages/SupervisorPage';

test.describe('logging in', () => {
  test('the right password lands an operator on their home', async ({ page }) => {
    const login = new LoginPage(page);
    await login.goto();
    await login.logIn('alice', PEOPLE.alice.password);

    const home = new OperatorHomePage(page);
    await expect(page).toHaveURL('/');
    await expect(home.heading).toBeVisible();
    await expect(page.getByTestId('current-user')).toContainText('alice');
    for (const queue of PEOPLE.alice.queues) {
      await expect(home.queueCard(queue)).toBeVisible();
    }
    await expect(home.queueCard('content-moderation')).toHaveCount(0);
  });

  test('a supervisor lands on the supervisor page', async ({ page }) => {
    const login = new LoginPage(page);
    await login.goto();
    await login.logIn('sam', PEOPLE.sam.password);

    await expect(page).toHaveURL('/supervisor');
    await expect(new SupervisorPage(page).queueStats).toBeVisible();
  });

  test('a wrong password shows an error and stays on the login page', async ({ page }) => {
    const login = new LoginPage(page);
    await login.goto();
    const answered = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/login'));
    await login.logIn('alice', 'not-alices-password');

    expect((await answered).status()).toBe(401);
    await expect(login.error).toHaveText('Wrong name or password.');
    await expect(page).toHaveURL('/login');
    await expect(page.getByTestId('current-user')).toHaveCount(0);
    await expect(login.submit).toBeVisible();
  });

  test('after logging in, a deep link sent to the login page is followed', async ({ page }) => {
    await page.goto('/supervisor/queues/invoice-review?state=ready');
    await expect(page).toHaveURL(/\/login\?next=/);

    await new LoginPage(page).logIn('sam', PEOPLE.sam.password);
    await expect(page).toHaveURL('/supervisor/queues/invoice-review?state=ready');
    await expect(page.getByRole('heading', { name: /invoice-review/ })).toBeVisible();
  });
});

test.describe('access', () => {
  test('an operator opening /supervisor gets the 403 page', async ({ openAs }) => {
    const page = await openAs('alice');
    const response = await page.goto('/supervisor');

    expect(response?.status()).toBe(403);
    await expect(page.getByRole('heading', { name: 'Not for you' })).toBeVisible();
    await expect(page.getByTestId('error-message')).toHaveText("You don't have access to this page.");
    await expect(page.getByTestId('queue-stats')).toHaveCount(0);
  });

  test('an anonymous visitor of / is sent to the login page', async ({ page }) => {
    await page.goto('/');
    await expect(page).toHaveURL('/login');
    await expect(new LoginPage(page).submit).toBeVisible();
  });

  test('an anonymous visitor of a supervisor page is sent to log in with the page to come back to', async ({ page }) => {
    await page.goto('/supervisor');
    await expect(page).toHaveURL('/login?next=%2Fsupervisor');
  });

  test('the JSON API refuses the anonymous with 401', async ({ request }) => {
    const res = await request.get('/api/v1/queues');
    expect(res.status()).toBe(401);
    expect((await res.json()).error.code).toBe('unauthenticated');
  });
});
