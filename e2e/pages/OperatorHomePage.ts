import { expect, type Locator, type Page } from '@playwright/test';
import type { QueueName } from '../constants';
import { LiveUpdates } from './LiveUpdates';

/** The operator's home, "My work": the queues they may claim from. */
export class OperatorHomePage {
  readonly heading: Locator;
  readonly claimAny: Locator;
  readonly flash: Locator;
  readonly myReservations: Locator;
  readonly live: LiveUpdates;
  /** The "New job in <queue>: <title>" notices pushed by the websocket. */
  readonly toasts: Locator;
  /** "My recent work": the operator's reservations that ended, newest first. */
  readonly recentWork: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { name: 'My work' });
    this.claimAny = page.getByTestId('claim-any');
    this.flash = page.getByTestId('flash');
    this.myReservations = page.getByTestId('my-reservations');
    this.live = new LiveUpdates(page);
    this.toasts = page.getByTestId('toast');
    this.recentWork = page.getByTestId('recent-work');
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

  /** The toast announcing a job by its (unique) title. */
  toastFor(title: string): Locator {
    return this.toasts.filter({ hasText: title });
  }

  /** The toast's Claim button: claims the job the toast names, if it is still waiting. */
  toastClaimButton(title: string): Locator {
    return this.toastFor(title).getByRole('button', { name: 'Claim', exact: true });
  }

  /**
   * Claims the very job a toast announces (the page must be live before
   * the job is made) and waits for its work page. On a queue that ages
   * priorities, "Claim next" may rightly take an older job instead.
   */
  async claimFromToast(title: string) {
    await this.toastClaimButton(title).click();
    await this.page.waitForURL(/\/jobs\/[^/]+$/);
  }

  /** The entries of "My recent work", newest first. */
  recentItems(): Locator {
    return this.recentWork.getByRole('listitem');
  }

  /** The entries of "My recent work" about a job, by its (unique) title. */
  recentItemsFor(title: string): Locator {
    return this.recentItems().filter({ hasText: title });
  }

  /** The ready count a card shows now, as a number. */
  async readyCountNow(queue: QueueName): Promise<number> {
    const text = (await this.readyCount(queue).textContent())?.trim() ?? '';
    if (!/^\d+$/.test(text)) throw new Error(`ready count of ${queue} is ${JSON.stringify(text)}`);
    return Number(text);
  }

  claimNextButton(queue: QueueName): Locator {
    return this.queueCard(queue).getByRole('button', { name: `Claim next from ${queue}`, exact: true });
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
