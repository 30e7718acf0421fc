import { expect, test as setup } from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';
import { authFile, PEOPLE, type Person } from './constants';
import { LoginPage } from './pages/LoginPage';

// Each person logs in once; the tests open browser contexts with the saved
// session instead of logging in again.
for (const person of Object.keys(PEOPLE) as Person[]) {
  setup(`log in as ${person}`, async ({ page }) => {
    const login = new LoginPage(page);
    await login.goto();
    await login.logIn(person, PEOPLE[person].password);
    await expect(page.getByTestId('current-user')).toContainText(person);
    fs.mkdirSync(path.dirname(authFile(person)), { recursive: true });
    await page.context().storageState({ path: authFile(person) });
  });
}
