import type { Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { OperatorHomePage } from './pages/OperatorHomePage';

// A supervisor runs queues from the browser: pausing one stops claims on
// every operator page that shows it, at once and without a reload.
//
// address-verification is granted to carol alone among the operators.

/** Notices reach an open page within this. */
const AT_ONCE = 1_000;
const QUEUE = 'address-verification';

/** Presses a queue's pause, resume button on its page as sam, accepting the confirmation. */
async function press(sam: Page, action: 'pause' | 'resume') {
  await sam.goto(`/supervisor/queues/${QUEUE}`);
  sam.once('dialog', (d) => d.accept());
  await sam.getByTestId(`queue-${action}`).getByRole('button').click();
  await expect(sam.getByTestId('flash')).toContainText(action === 'pause' ? `Paused ${QUEUE}` : `Resumed ${QUEUE}`);
}

test.describe('queues', () => {
  test('pausing a queue stops claims on the operator page at once; resuming brings them back', async ({ openAs, jobs }) => {
    const sam = await openAs('sam');
    const carol = await openAs('carol');
    const home = new OperatorHomePage(carol);
    await home.goto();
    await home.live.waitUntilLive();
    const job = await jobs.create(QUEUE, 'Verify address: Karl-Marx-Allee 1, Berlin');
    await expect(home.claimNextButton(QUEUE)).toBeEnabled({ timeout: AT_ONCE });
    const stillTheSamePage = await home.live.markDocument();

    try {
      await press(sam, 'pause');
      await expect(sam.getByTestId('paused-note')).toBeVisible();

      const card = home.queueCard(QUEUE);
      await expect(home.claimNextButton(QUEUE)).toBeDisabled({ timeout: AT_ONCE });
      await expect(card.getByTestId('paused')).toHaveText('Paused', { timeout: 2 * AT_ONCE });
      await stillTheSamePage();

      // A job added meanwhile counts, but pops no toast to claim it by.
      const late = await jobs.create(QUEUE, 'Verify address: Calle de Alcalá 1, Madrid');
      await expect(home.readyCount(QUEUE)).toHaveText(/\d+/);
      await carol.waitForTimeout(AT_ONCE);
      await expect(home.toastFor(late.title)).toHaveCount(0);
    } finally {
      await press(sam, 'resume');
    }
    await home.goto();
    await expect(home.queueCard(QUEUE).getByTestId('paused')).toHaveCount(0);
    await expect(home.claimNextButton(QUEUE)).toBeEnabled();
    expect(await home.claimNextIn(QUEUE)).toBe(`/jobs/${job.id}`);
  });
});
