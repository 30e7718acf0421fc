import { expect, test } from './fixtures';
import { checkScreen } from './screen';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { WorkPage } from './pages/WorkPage';

// Supervisors build a queue's outcome form in an editor, every problem
// said at its field at once; an outcome field may start from a value of
// the job's payload; amounts are typed as the viewer's locale writes them;
// and the payload reads as people write it (a table for the invoice lines,
// rates as percentages, tags as chips).

/** Keeps a picture of the page among the test's results, to look at. */
async function shoot(page: import('@playwright/test').Page, name: string) {
  await page.screenshot({ path: test.info().outputPath(`${name}.png`), fullPage: true });
}

test.describe('outcome forms and payloads', () => {
  for (const screen of [{ width: 1366, height: 800 }, { width: 390, height: 844 }]) {
    test(`a supervisor builds an outcome form in the editor; every problem is said at its field at once (${screen.width} px)`, async ({ openAs }, info) => {
      const sam = await openAs('sam', 'A', { viewport: screen, locale: 'en-US' });
      const name = `editor-${Date.now().toString(36)}${info.retry}-${screen.width}`;
      await sam.goto('/supervisor/queues/new');
      await sam.getByLabel('Name').fill(name);
      await sam.getByLabel(/^Decisions/).fill('approve');
      const fields = sam.getByTestId('editor-fields').getByRole('listitem');
      await sam.getByRole('button', { name: 'Add a field' }).click();
      await expect(fields).toHaveCount(1);
      await sam.getByRole('button', { name: 'Add a field' }).click();
      await expect(fields).toHaveCount(2);
      // What was typed survives an edit.
      await expect(sam.getByLabel(/^Decisions/)).toHaveValue('approve');

      const first = fields.nth(0), second = fields.nth(1);
      await first.getByLabel(/^Name/).fill('Amount');
      await first.getByLabel('Type').selectOption('number');
      await first.getByLabel(/^Lowest/).fill('none');
      await first.getByLabel(/^Start from/).fill('invoice..gross');
      await second.getByLabel(/^Name/).fill('kind');
      await second.getByLabel('Type').selectOption('one_of');
      await second.getByLabel(/^Options/).fill('Only one');
      await sam.getByRole('button', { name: 'Create queue' }).click();

      await expect(sam.getByTestId('settings-problem')).toHaveText('The outcome form has 5 problems: each is said at its place below.');
      await expect(sam.getByTestId('editor-problem-choices')).toHaveText('Decisions must be 2 to 10 decisions, or none.');
      await expect(sam.getByTestId('editor-problem-fields[0].name')).toContainText('Name must be lowercase letters, digits and _');
      await expect(sam.getByTestId('editor-problem-fields[0].min')).toHaveText('Enter a number, like 0 or 2500.50.');
      await expect(sam.getByTestId('editor-problem-fields[0].prefill')).toContainText('Start from must be a path into the payload');
      await expect(sam.getByTestId('editor-problem-fields[1].options')).toHaveText('Options must be 2 to 20 options.');
      await expect(fields.nth(0).getByLabel(/^Name/)).toHaveAttribute('aria-invalid', 'true');
      await checkScreen(sam, `outcome editor with problems (${screen.width})`, screen.width < 600);
      await shoot(sam, `editor-problems-${screen.width}`);

      await sam.getByLabel(/^Decisions/).fill('approve\nreject');
      await fields.nth(0).getByLabel(/^Name/).fill('amount');
      await fields.nth(0).getByLabel(/^Lowest/).fill('0');
      await fields.nth(0).getByLabel(/^Start from/).fill('invoice.gross');
      await fields.nth(1).getByLabel(/^Options/).fill('Goods\nServices');
      await sam.getByRole('button', { name: 'Move up field 2' }).click();
      await expect(fields.nth(0).getByLabel(/^Name/)).toHaveValue('kind');
      await sam.getByRole('button', { name: 'Create queue' }).click();
      await expect(sam.getByTestId('flash')).toContainText(`Created queue ${name}`);
      await expect(fields.nth(0).getByLabel(/^Name/)).toHaveValue('kind');
      await expect(fields.nth(1).getByLabel(/^Start from/)).toHaveValue('invoice.gross');

      // The same form as JSON, the advanced view.
      await sam.getByRole('button', { name: 'Edit as JSON' }).click();
      await expect(sam.getByTestId('outcome-form')).toHaveValue(/"prefill": "invoice.gross"/);
      await sam.getByRole('button', { name: 'Edit as a form' }).click();
      await expect(fields).toHaveCount(2);
      await sam.getByRole('button', { name: 'Remove field 1' }).click();
      await expect(fields).toHaveCount(1);
      await sam.getByRole('button', { name: 'Save settings' }).click();
      await expect(sam.getByTestId('flash')).toContainText(`Saved the settings of ${name}`);
      await expect(fields).toHaveCount(1);
      await expect(fields.nth(0).getByLabel(/^Name/)).toHaveValue('amount');
    });
  }

  for (const { locale, shown, typed, refusal, screen } of [
    { locale: 'de-DE', shown: '1.188,00', typed: '1.250,5', refusal: 'Enter an amount like 1.188,00.', screen: { width: 390, height: 844 } },
    { locale: 'en-US', shown: '1,188.00', typed: '1,250.5', refusal: 'Enter an amount like 1,188.00.', screen: { width: 1366, height: 900 } },
    { locale: 'en-US', shown: '1,188.00', typed: '1.250,5', refusal: 'Enter an amount like 1,188.00.', screen: { width: 390, height: 844 } },
  ]) {
    test(`an invoice's amount to pay starts from its gross and is read as ${locale} writes it (${screen.width} px)`, async ({ openAs, jobs, api }) => {
      const payload = {
        invoice: { number: 'INV-E2E-0001', currency: 'EUR', net: 998.32, vat_rate: 0.19, vat: 189.68, gross: 1188.0 },
        vendor: { name: 'Nordwind GmbH', vat_id: 'DE287451963' },
        lines: [
          { sku: 'NW-PAL-120', description: 'Euro pallets, heat-treated', qty: 4, unit_price: 249.0 },
          { sku: 'NW-SRV-01', description: 'Pallet wrapping machine service', qty: 1, unit_price: 192.0 },
        ],
        flags: ['amount_over_approval_threshold', 'new_vendor'],
      };
      {
        const alice = await openAs('alice', 'A', { viewport: screen, locale });
        const home = new OperatorHomePage(alice);
        const work = new WorkPage(alice);
        const job = await jobs.create('invoice-review', `Check invoice INV-E2E-0001 (${locale}, ${screen.width})`, { payload });
        await home.goto();
        await home.claimNextIn('invoice-review');
        expect(await work.waitForJob()).toBe(job.id);

        // The payload as people read it.
        const details = alice.getByTestId('payload');
        await expect(details.getByTestId('payload-table').getByRole('columnheader')).toHaveText(['SKU', 'Description', 'Qty', 'Unit price']);
        await expect(details.getByTestId('chips').getByRole('listitem')).toHaveText(['amount_over_approval_threshold', 'new_vendor']);
        await expect(details.getByText(locale === 'de-DE' ? '19 %' : '19%', { exact: true })).toBeVisible();
        await expect(details.getByText('VAT ID', { exact: true })).toBeVisible();

        const amount = alice.getByLabel(/^Amount to pay/);
        await expect(amount).toHaveValue(shown);
        await expect(alice.getByTestId('prefilled-amount_to_pay')).toHaveText('· from invoice.gross');
        await checkScreen(alice, `work page with an invoice (${locale}, ${screen.width})`, screen.width < 600);
        if (locale === 'en-US') await shoot(alice, `work-invoice-${screen.width}`);

        await amount.fill('a lot');
        await work.completeButton.click();
        await expect(alice.getByTestId('problem-amount_to_pay')).toHaveText(refusal);
        await expect(amount).toBeFocused();
        expect((await api.get(job)).state).toBe('reserved');

        await amount.fill(typed);
        await alice.getByRole('radio', { name: 'Approved' }).check();
        await work.completeButton.click();
        await expect(alice.getByTestId('flash')).toContainText('Completed. Nice work.');
        expect((await api.get(job)).result).toEqual({ verdict: 'Approved', amount_to_pay: 1250.5 });
      }
    });
  }
});
