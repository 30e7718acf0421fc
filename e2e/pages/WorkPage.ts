import { expect, type Locator, type Page } from '@playwright/test';
import { LiveUpdates } from './LiveUpdates';

/**
 * A job's work page, /jobs/<id>: where its holder works it, where an
 * operator whose reservation ended learns why, and the read-only view of
 * the job a supervisor gets (status, result, timeline).
 */
export class WorkPage {
  readonly title: Locator;
  readonly countdown: Locator;
  readonly payload: Locator;
  /**
   * Why the viewer's reservation ended: "sam took this job back: <reason>",
   * "sam canceled this job.", "This reservation ended: <why>." (your time
   * ran out, completed in another tab): live, or on opening the job again.
   */
  readonly ended: Locator;
  /** The warning shown in the reservation's last minute. */
  readonly expiring: Locator;
  readonly live: LiveUpdates;
  readonly notes: Locator;
  readonly completeButton: Locator;
  /** "Complete & next", the form's default button. */
  readonly completeNextButton: Locator;
  readonly releaseButton: Locator;
  readonly skipButton: Locator;
  readonly extendButton: Locator;
  /** What More time says next to it: "2 extensions left · adds up to 0:45". */
  readonly extendHint: Locator;
  readonly failButton: Locator;
  // The supervisor's view.
  readonly status: Locator;
  /** The job's state as the API names it: ready, reserved, completed, dead, … */
  readonly state: Locator;
  /** "attempt 2 of 3", "1 of 3 attempts used", "all 3 attempts used". */
  readonly attempts: Locator;
  /** "Completed by carol, <time>" on a completed job. */
  readonly completedBy: Locator;
  readonly lastError: Locator;
  /** A completed job's notes, as a paragraph. */
  readonly resultNotes: Locator;
  /** A completed job's other result fields: terms (names) and definitions (values). */
  readonly resultFields: Locator;
  readonly timeline: Locator;
  /** One per history entry, newest first: "<time> claimed by carol (attempt 1) · deadline <time>". */
  readonly timelineEntries: Locator;

  constructor(readonly page: Page) {
    this.title = page.getByTestId('job-title');
    this.countdown = page.getByTestId('countdown');
    // Nested objects render nested lists with the same test id: the outermost is the payload.
    this.payload = page.getByTestId('payload').first();
    this.ended = page.getByTestId('ended');
    this.expiring = page.getByTestId('expiring');
    this.live = new LiveUpdates(page);
    this.notes = page.getByLabel('Notes');
    this.completeButton = page.getByTestId('complete');
    this.completeNextButton = page.getByTestId('complete-next');
    this.releaseButton = page.getByTestId('release');
    this.skipButton = page.getByTestId('skip');
    // More time's first (shortest) choice; extendChoice names another.
    this.extendButton = page.getByTestId('extend').first();
    this.extendHint = page.getByTestId('extend-hint');
    this.failButton = page.getByTestId('fail');
    this.status = page.getByTestId('job-status');
    this.state = page.getByTestId('job-state');
    this.attempts = page.getByTestId('attempts');
    this.completedBy = page.getByTestId('completed-by');
    this.lastError = page.getByTestId('last-error');
    this.resultNotes = page.getByTestId('result-notes');
    this.resultFields = page.getByTestId('result-fields');
    this.timeline = page.getByTestId('timeline');
    this.timelineEntries = this.timeline.getByRole('listitem');
  }

  /** A supervisor's view of the job, read-only. */
  async goto(jobId: string) {
    await this.page.goto(`/jobs/${encodeURIComponent(jobId)}`);
    await expect(this.title).toBeVisible();
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

  /** Completes with notes by pressing Enter in a result field: the form's default button, Complete & next. */
  async completeAndNext(notes: string) {
    await this.notes.fill(notes);
    await this.page.getByLabel('Field name 1', { exact: true }).press('Enter');
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

  /** Asks for more time: the first choice, or the one named ("+15 min"). */
  async extend(choice?: string) {
    await (choice ? this.page.getByRole('button', { name: choice }) : this.extendButton).click();
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
