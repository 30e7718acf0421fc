import { expect, type Dialog, type Locator, type Page } from '@playwright/test';

type Action = 'pause' | 'resume' | 'rotate' | 'remove';

/** The supervisors' webhooks: the list and form (/webhooks), and a webhook's page (/webhooks/<id>). */
export class WebhooksPage {
  readonly heading: Locator;
  readonly form: Locator;
  readonly flash: Locator;
  readonly secret: Locator;
  readonly copy: Locator;
  /** The mark on the navigation's Webhooks link: how many webhooks their receivers got disabled. */
  readonly navMark: Locator;

  constructor(readonly page: Page) {
    this.heading = page.getByRole('heading', { name: 'Webhooks', exact: true });
    this.form = page.getByTestId('add-webhook');
    this.flash = page.getByTestId('flash');
    this.secret = page.getByTestId('secret');
    this.copy = page.getByRole('button', { name: 'Copy' });
    this.navMark = page.getByRole('navigation', { name: 'Main' }).getByTestId('webhooks-disabled');
  }

  async goto() {
    await this.page.goto('/webhooks');
    await expect(this.heading).toBeVisible();
  }

  /**
   * Fills the form for a new webhook and sends it: the events ticked are
   * those given (default: as the form comes, every one), of the queues
   * given (default: every queue).
   */
  async add(url: string, options: { queues?: string[]; events?: string[] } = {}) {
    await this.form.getByLabel('URL').fill(url);
    if (options.events) {
      for (const box of await this.form.getByRole('group', { name: 'Events' }).getByRole('checkbox').all()) {
        await box.setChecked(options.events.includes((await box.getAttribute('value')) ?? ''));
      }
    }
    if (options.queues) {
      await this.form.getByLabel('Only the queues ticked').check();
      for (const q of options.queues) await this.form.getByLabel(q, { exact: true }).check();
    }
    await this.form.getByRole('button', { name: 'Add webhook' }).click();
  }

  /** The id of the webhook whose page is open. */
  async openId(): Promise<string> {
    const action = await this.page.getByTestId('webhook-remove').getAttribute('action');
    const id = action?.match(/^\/webhooks\/(wh_[a-z0-9]+)\/remove$/)?.[1];
    if (!id) throw new Error(`no webhook's page is open: ${action}`);
    return id;
  }

  row(id: string): Locator {
    return this.page.getByTestId(`webhook-${id}`);
  }

  /** The problem the form shows at a field. */
  problem(field: 'url' | 'events' | 'queues'): Locator {
    return this.page.getByTestId(`problem-${field}`);
  }

  /** The row of the delivery of an event (its webhook-id) on the webhook's page. */
  delivery(eventId: string): Locator {
    return this.page.getByTestId(`delivery-${eventId}`);
  }

  /** Presses an action of the webhook's page; returns the question it asked first, if any. */
  async act(action: Action): Promise<string | undefined> {
    let asked: string | undefined;
    const answer = async (dialog: Dialog) => {
      asked = dialog.message();
      await dialog.accept();
    };
    this.page.once('dialog', answer);
    await this.page.getByTestId(`webhook-${action}`).getByRole('button').click();
    this.page.off('dialog', answer);
    return asked;
  }
}
