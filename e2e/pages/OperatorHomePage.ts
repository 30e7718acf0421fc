import { expect, type Locator, type Page } from '@playwright/test';
import type { QueueName } from '../constants';

/** The operator's home, "My work": the queues they may claim from. */
export class OperatorHomePage {
  readonly heading: Locator;
  readonly claimAny: Locator;
  readonly flash: Locator;
  readonly myReservations: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { name: 'My work' });
    this.claimAny = page.getByTestId('claim-any');
    this.flash = page.getByTestId('flash');
    this.myReservations = page.getByTestId('my-reservations');
  }

  async goto() {
    await this.page.goto('/');
    await expect(this.heading).toBeVisible();
  }

  queueCard(queue: QueueName): Locator {
    return this.page.getByTestId(`queue-${queue}`);
  }

  readyCount(queue: QueueName): Locator {
    return this.queueCard(queue).getByTestId('ready-count');
  }

  claimNextButton(queue: QueueName): Locator {
    return this.queueCard(queue).getByRole('button', { name: 'Claim next', exact: true });
  }

  /**
   * Clicks "Claim next" on a queue's card and follows the server to where it
   * sends the operator: "/jobs/<id>" when a job was claimed, "/" (with a
   * flash) when nothing was waiting. Returns that path.
   */
  async claimNextIn(queue: QueueName): Promise<string> {
    const posted = this.page.waitForResponse(
      (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === `/queues/${queue}/claim`,
    );
    await this.claimNextButton(queue).click();
    const response = await posted;
    expect(response.status(), `claim from ${queue}`).toBe(303);
    const location = response.headers()['location'];
    await this.page.waitForURL(location);
    return location;
  }

  /** The single-key shortcut for "Claim next from any of my queues". */
  async pressClaimHotkey() {
    await this.page.keyboard.press('c');
  }
}
