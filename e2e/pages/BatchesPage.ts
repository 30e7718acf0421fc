import { expect, type Locator, type Page } from '@playwright/test';
import { LiveUpdates } from './LiveUpdates';

/** The supervisor's batches page, /supervisor/batches: every batch's progress, and its cancel button. */
export class BatchesPage {
  readonly heading: Locator;
  readonly table: Locator;
  readonly noBatches: Locator;
  readonly flash: Locator;
  readonly live: LiveUpdates;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { name: 'Batches', exact: true });
    this.table = page.getByTestId('batches');
    this.noBatches = page.getByTestId('no-batches');
    this.flash = page.getByTestId('flash');
    this.live = new LiveUpdates(page);
  }

  async goto() {
    await this.page.goto('/supervisor/batches');
    await expect(this.heading).toBeVisible();
  }

  /** A batch's row; its data-state is the API's state (open | sealed | completed | … | canceled). */
  row(batchId: string): Locator {
    return this.page.getByTestId(`batch-${batchId}`);
  }

  /** The state as people read it: open, running, completed, completed with failures, canceling, canceled. */
  state(batchId: string): Locator {
    return this.row(batchId).getByTestId('batch-state');
  }

  /** The bar; its accessible name says "<n> of <total> done, <d> dead, <c> canceled, <r> in progress, <w> waiting". */
  progress(batchId: string): Locator {
    return this.row(batchId).getByTestId('batch-progress');
  }

  /** The legend under the bar: the same counts in words. */
  counts(batchId: string): Locator {
    return this.row(batchId).getByTestId('batch-counts');
  }

  /** "<in progress> / <cap>" ("∞" for no cap). */
  slots(batchId: string): Locator {
    return this.row(batchId).getByTestId('batch-slots');
  }

  cancelButton(batchId: string): Locator {
    return this.row(batchId).getByTestId('cancel-batch');
  }

  /** Waits until the bar says these counts (what a screen reader would read). */
  async expectProgress(
    batchId: string,
    c: { done: number; total: number; dead?: number; canceled?: number; inProgress?: number; waiting?: number },
    options?: { timeout?: number },
  ) {
    const label =
      `${c.done} of ${c.total} done, ${c.dead ?? 0} dead, ${c.canceled ?? 0} canceled, ` +
      `${c.inProgress ?? 0} in progress, ${c.waiting ?? 0} waiting`;
    await expect(this.progress(batchId)).toHaveAttribute('aria-label', label, options);
  }

  /**
   * Clicks "Cancel batch", accepts the confirmation, waits for the page the
   * server redirects to, and returns the question it asked.
   */
  async cancel(batchId: string): Promise<string> {
    const asked = new Promise<string>((resolve) => {
      this.page.once('dialog', async (dialog) => {
        resolve(dialog.message());
        await dialog.accept();
      });
    });
    const posted = this.page.waitForResponse(
      (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === `/supervisor/batches/${batchId}/cancel`,
    );
    // The server redirects back to this same page: wait for the new document.
    const reloaded = this.page.waitForEvent('framenavigated', (f) => f === this.page.mainFrame());
    await this.cancelButton(batchId).click();
    const response = await posted;
    expect(response.status(), `cancel batch ${batchId}`).toBe(303);
    await reloaded;
    await this.page.waitForLoadState();
    await expect(this.page).toHaveURL('/supervisor/batches');
    return asked;
  }
}
