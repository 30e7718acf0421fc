import type { Locator, Page } from '@playwright/test';

export class LoginPage {
  readonly name: Locator;
  readonly password: Locator;
  readonly submit: Locator;
  readonly error: Locator;

  constructor(readonly page: Page) {
    this.name = page.getByLabel('Name');
    this.password = page.getByLabel('Password');
    this.submit = page.getByRole('button', { name: 'Log in' });
    this.error = page.getByTestId('login-error');
  }

  async goto(next?: string) {
    await this.page.goto(next ? `/login?next=${encodeURIComponent(next)}` : '/login');
  }

  async logIn(name: string, password: string) {
    await this.name.fill(name);
    await this.password.fill(password);
    await this.submit.click();
  }
}
