import { expect, type Locator, type Page } from '@playwright/test';
import type { QueueName } from '../constants';
import { LiveUpdates } from './LiveUpdates';

type State = 'ready' | 'scheduled' | 'reserved' | 'completed' | 'dead' | 'canceled';

/** The supervisor's pages: /supervisor and /supervisor/queues/<name>. */
export class SupervisorPage {
  readonly heading: Locator;
  readonly queueStats: Locator;
  readonly reservations: Locator;
  readonly noReservations: Locator;
  readonly live: LiveUpdates;
  readonly flash: Locator;
  readonly jobs: Locator;
  readonly noJobs: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { name: 'Supervise' });
    this.queueStats = page.getByTestId('queue-stats');
    this.reservations = page.getByTestId('reservations');
    this.noReservations = page.getByTestId('no-reservations');
    this.live = new LiveUpdates(page);
    this.flash = page.getByTestId('flash');
    this.jobs = page.getByTestId('jobs');
    this.noJobs = page.getByTestId('no-jobs');
  }

  async goto() {
    await this.page.goto('/supervisor');
    await expect(this.heading).toBeVisible();
  }

  /** Opens a queue's jobs in a state; with find, only those whose title has it (the page's filter). */
  async gotoQueue(queue: QueueName, state: State, find?: string) {
    const q = find ? `&q=${encodeURIComponent(find)}` : '';
    await this.page.goto(`/supervisor/queues/${queue}?state=${state}${q}`);
  }

  reservation(jobId: string): Locator {
    return this.page.getByTestId(`reservation-${jobId}`);
  }

  jobRow(jobId: string): Locator {
    return this.page.getByTestId(`job-${jobId}`);
  }

  /**
   * Clicks a confirmed action (requeue = "Force release", or cancel) in a
   * row, goes ahead in the box that asks why (giving reason, if any), and
   * returns the question it asked.
   */
  async confirmAction(row: Locator, action: 'requeue' | 'cancel', reason = ''): Promise<string> {
    await row.getByTestId(action).click();
    return giveReason(this.page, reason);
  }

  async forceRelease(jobId: string, reason = ''): Promise<string> {
    return this.confirmAction(this.reservation(jobId), 'requeue', reason);
  }

  /** Cancels a held job from the live reservations. */
  async cancelReservation(jobId: string, reason = ''): Promise<string> {
    return this.confirmAction(this.reservation(jobId), 'cancel', reason);
  }
}

/**
 * giveReason answers the box that asks a supervisor why they cancel,
 * requeue or take back jobs, open on the page: types the reason (if any),
 * goes ahead, and returns the question the box asked.
 */
export async function giveReason(page: Page, reason = ''): Promise<string> {
  const box = page.getByTestId('reason-dialog');
  await expect(box).toBeVisible();
  const question = (await box.getByRole('heading').textContent()) ?? '';
  if (reason) await box.getByRole('textbox', { name: /Reason/ }).fill(reason);
  await box.getByTestId('reason-go').click();
  return question;
}
