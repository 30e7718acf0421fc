import { expect, type Locator, type Page } from '@playwright/test';
import { LiveUpdates } from './LiveUpdates';

/** A job's work page, /jobs/<id>. */
export class WorkPage {
  readonly title: Locator;
  readonly countdown: Locator;
  readonly payload: Locator;
  /** "Time is up": the reservation's deadline passed (countdown or notice). */
  readonly expired: Locator;
  /** A supervisor took the job back (or it was finished elsewhere). */
  readonly taken: Locator;
  /** The warning shown in the reservation's last minute. */
  readonly expiring: Locator;
  readonly live: LiveUpdates;
  readonly notes: Locator;
  readonly completeButton: Locator;
  readonly releaseButton: Locator;
  readonly skipButton: Locator;
  readonly extendButton: Locator;
  readonly failButton: Locator;

  constructor(readonly page: Page) {
    this.title = page.getByTestId('job-title');
    this.countdown = page.getByTestId('countdown');
    // Nested objects render nested lists with the same test id: the outermost is the payload.
    this.payload = page.getByTestId('payload').first();
    this.expired = page.getByTestId('expired');
    this.taken = page.getByTestId('taken');
    this.expiring = page.getByTestId('expiring');
    this.live = new LiveUpdates(page);
    this.notes = page.getByLabel('Notes');
    this.completeButton = page.getByTestId('complete');
    this.releaseButton = page.getByTestId('release');
    this.skipButton = page.getByTestId('skip');
    this.extendButton = page.getByTestId('extend');
    this.failButton = page.getByTestId('fail');
  }

  /** Waits until the browser is on a work page and returns the job id from its URL. */
  async waitForJob(): Promise<string> {
    await this.page.waitForURL(/\/jobs\/[^/]+$/);
    await expect(this.title).toBeVisible();
    return this.jobId();
  }

  jobId(): string {
    const m = new URL(this.page.url()).pathname.match(/^\/jobs\/([^/]+)$/);
    if (!m) throw new Error(`not on a work page: ${this.page.url()}`);
    return decodeURIComponent(m[1]);
  }

  /** Fills the result (notes and up to three key/value rows) and clicks Complete. */
  async complete(notes: string, fields: Record<string, string> = {}) {
    await this.notes.fill(notes);
    const entries = Object.entries(fields);
    if (entries.length > 3) throw new Error('the form has three result rows');
    for (const [i, [key, value]] of entries.entries()) {
      await this.page.getByLabel(`Field name ${i + 1}`, { exact: true }).fill(key);
      await this.page.getByLabel(`Field value ${i + 1}`, { exact: true }).fill(value);
    }
    await this.completeButton.click();
  }

  /**
   * What a stale page could still send: re-enables the Complete button the
   * page disabled when the reservation ended (a user with devtools, or a
   * page whose notice never came) and completes. The server has to refuse.
   */
  async completeDespiteLostReservation(notes: string, fields: Record<string, string> = {}) {
    await this.completeButton.evaluate((b) => {
      (b as HTMLButtonElement).disabled = false;
    });
    await this.complete(notes, fields);
  }

  async release() {
    await this.releaseButton.click();
  }

  async skip() {
    await this.skipButton.click();
  }

  async extend() {
    await this.extendButton.click();
  }

  /** Opens "Can't be done…", gives the reason and reports the failure. */
  async fail(reason: string) {
    // The "Can't be done…" disclosure: the group that holds the fail button.
    // While closed it is just its summary line, so clicking it opens it.
    const disclosure = this.page.getByRole('group').filter({ has: this.failButton });
    await disclosure.click();
    await disclosure.getByLabel('Why').fill(reason);
    await this.failButton.click();
  }

  /** The reservation token the page's forms carry (what a form post would send). */
  async formToken(): Promise<string> {
    return this.releaseButton.evaluate((b) => ((b as HTMLButtonElement).form!.elements.namedItem('token') as HTMLInputElement).value);
  }
}
