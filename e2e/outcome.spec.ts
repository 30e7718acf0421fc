import { expect, test } from './fixtures';
import { checkScreen } from './screen';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { WorkPage } from './pages/WorkPage';

// A queue may say what completing one of its jobs must say: the demo's
// support-escalations asks for a decision (resolved, refund, escalate), a
// category, whether the customer was told, and a refund amount when the
// decision is a refund. The work page renders that form, the server
// checks it, and a refused form comes back in place, as typed.

test.describe('structured outcomes', () => {
  test('an outcome form is checked on the page, keeps what was typed, and is stored typed', async ({ openAs, jobs, api }) => {
    const bob = await openAs('bob', 'A', { viewport: { width: 390, height: 844 }, locale: 'en-US' });
    const home = new OperatorHomePage(bob);
    const work = new WorkPage(bob);
    await home.goto();
    await home.live.waitUntilLive();
    // support-escalations ages priorities: its toast claims this very job.
    const job = await jobs.create('support-escalations', 'Customer charged twice for one order');
    await home.claimFromToast(job.title);
    expect(await work.waitForJob()).toBe(job.id);
    const stillTheSamePage = await home.live.markDocument();

    // The queue's form instead of free name/value rows.
    const decision = bob.getByRole('group', { name: /Decision/ });
    await expect(decision.getByRole('radio')).toHaveCount(3);
    await expect(bob.getByLabel('Field name 1', { exact: true })).toHaveCount(0);
    await expect(bob.getByText('(required for Refund)')).toBeVisible();

    await work.notes.fill('Called her back; the second charge is a duplicate.');
    await decision.getByRole('radio', { name: 'Refund' }).check();
    await bob.getByLabel(/Refund amount/).fill('a lot');
    const answered = bob.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith(`/jobs/${job.id}/complete`));
    await work.completeButton.click();
    expect((await answered).status()).toBe(200);

    // Answered in place: each problem next to its value, the rest as typed.
    await expect(bob.getByTestId('problem-category')).toHaveText('Choose one: Billing, Delivery, Account, Outage, Privacy or Other.');
    await expect(bob.getByTestId('problem-refund_amount')).toHaveText('Enter an amount like 1,188.00.');
    await expect(bob.getByTestId('problem-customer_told')).toHaveText('Choose Yes or No.');
    await expect(bob.getByTestId('complete-problem')).toHaveText('Not completed: 3 values above need a look.');
    await expect(work.notes).toHaveValue('Called her back; the second charge is a duplicate.');
    await expect(decision.getByRole('radio', { name: 'Refund' })).toBeChecked();
    await expect(bob.getByLabel(/Refund amount/)).toHaveValue('a lot');
    // The first problem has the focus.
    await expect(bob.getByLabel(/Category/)).toBeFocused();
    await stillTheSamePage();
    expect((await api.get(job)).state).toBe('reserved');
    await checkScreen(bob, 'work page with outcome problems (phone)', true);

    await bob.getByLabel(/Category/).selectOption('Billing');
    await bob.getByLabel(/Refund amount/).fill('1,188.50');
    await bob.getByRole('group', { name: /Customer told/ }).getByRole('radio', { name: 'Yes' }).check();
    await work.completeButton.click();
    await expect(bob.getByTestId('flash')).toContainText('Completed. Nice work.');
    const done = await api.get(job);
    expect(done.state).toBe('completed');
    expect(done.result).toEqual({
      decision: 'refund', category: 'Billing', refund_amount: 1188.5, customer_told: true,
      notes: 'Called her back; the second charge is a duplicate.',
    });
  });

  test('a supervisor sets a queue\'s outcome form as JSON; a bad one is refused as typed', async ({ openAs }, info) => {
    const sam = await openAs('sam', 'A', { locale: 'en-US' });
    const name = `outcome-${Date.now().toString(36)}${info.retry}`;
    await sam.goto('/supervisor/queues/new');
    await sam.getByLabel('Name').fill(name);
    await sam.getByRole('button', { name: 'Edit as JSON' }).click();
    const box = sam.getByTestId('outcome-form');
    const bad = '{"choices": ["approve"]}';
    await box.fill(bad);
    await sam.getByRole('button', { name: 'Create queue' }).click();
    await expect(sam.getByRole('alert')).toContainText('Outcome form: outcome.choices must be 2 to 10 choices, or none.');
    await expect(box).toHaveValue(bad);

    await box.fill('{"choices": ["approve", "reject"], "fields": [{"name": "reason", "type": "text", "required_for": ["reject"]}]}');
    await sam.getByRole('button', { name: 'Create queue' }).click();
    await expect(sam.getByTestId('flash')).toContainText(`Created queue ${name}`);
    // Stored, and shown again indented for the next change.
    await sam.getByRole('button', { name: 'Edit as JSON' }).click();
    await expect(box).toHaveValue(/"required_for": \[\n\s+"reject"\n\s+\]/);
    await box.fill('');
    await sam.getByRole('button', { name: 'Save settings' }).click();
    await expect(sam.getByTestId('flash')).toContainText(`Saved the settings of ${name}`);
    await expect(sam.getByTestId('editor-fields').getByRole('listitem')).toHaveCount(0);
    await expect(sam.getByLabel(/^Decisions/)).toHaveValue('');
  });
});
