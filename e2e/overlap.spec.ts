import { expect, test } from './fixtures';
import { type Person } from './constants';
import { checkScreen } from './screen';
import { SupervisorPage } from './pages/SupervisorPage';

// Several people per job, and a second pair of eyes: the demo's
// image-labels has each photo labelled by three people. Each answer but
// the last puts the job back in its place for someone else, and nobody
// gets it twice. Answers that agree on less than 70% of some field wait
// for a reviewer (alice, who has the skill "review"), who sees them side
// by side and approves: the job completes with what most answered.
// image-labels lets its three label one photo at the same time, each with
// a reservation of their own.

test.describe('overlap', () => {
  test('three people answer one job, a reviewer approves their split answers, and its page shows them side by side', async ({ claimAs, jobs, api, openAs }) => {
    test.slow(); // three people claim and answer in turn
    const job = await jobs.create('image-labels', 'Label product photo P-30001');
    const answers: [Person, string, string, string][] = [
      ['bob', 'Bags', 'Yes', '1'],
      ['carol', 'Bags', 'No', '1'],
      ['dana', 'Shoes', 'Yes', '2'],
    ];
    for (const [i, [who, category, logo, items]] of answers.entries()) {
      const { page, work, home } = await claimAs(who, job);
      await page.getByRole('group', { name: /Category/ }).getByRole('radio', { name: category }).check();
      await page.getByRole('group', { name: /Brand logo visible/ }).getByRole('radio', { name: logo }).check();
      await page.getByLabel(/Items in the picture/).fill(items);
      await work.completeButton.click();
      if (i < answers.length - 1) {
        await expect(page.getByTestId('flash')).toContainText(`${i + 1} of 3 answers are in; someone else answers it next.`);
        expect((await api.get(job)).state).toBe('ready');
        // Whoever answered never gets it again: their next claim is another job.
        await home.goto();
        await home.claimNextIn('image-labels');
        await expect(page).not.toHaveURL(new RegExp(`/jobs/${job.id}$`));
        await work.release();
        await expect(page.getByTestId('flash')).toContainText('Given back');
      } else {
        await expect(page.getByTestId('flash')).toContainText('a reviewer looks at it before it counts.');
      }
    }
    expect((await api.get(job)).state).toBe('ready');

    // alice reviews: the answers side by side, and why it waits for her.
    const alice = await openAs('alice');
    await alice.goto('/');
    const card = alice.getByTestId('queue-image-labels');
    await expect(card.getByTestId('reviews-waiting')).toContainText('to review');
    await card.getByRole('button', { name: /Review next/ }).click();
    await expect(alice).toHaveURL(new RegExp(`/jobs/${job.id}$`));
    await expect(alice.getByTestId('review-why')).toHaveText('The answers disagree more than this queue allows: a reviewer decides.');
    await expect(alice.getByTestId('job-answers').locator('tr.split')).toHaveCount(3);
    await checkScreen(alice, 'a review of answers that disagree', false);
    await alice.getByTestId('approve').click();
    await expect(alice.getByTestId('flash')).toContainText('Approved: the job is completed.');

    const done = await api.get(job) as unknown as { state: string; result: unknown; answers: { by: string }[] };
    expect(done.state).toBe('completed');
    expect(done.answers.map((a) => a.by)).toEqual(['bob', 'carol', 'dana']);
    expect(done.result).toEqual({ category: 'Bags', logo_visible: true, items: 1 });

    for (const phone of [false, true]) {
      const sam = await openAs('sam', 'A', phone ? { viewport: { width: 390, height: 844 } } : {});
      await sam.goto(`/jobs/${job.id}`);
      const panel = sam.getByTestId('job-answers');
      await expect(panel.getByRole('heading')).toHaveText('Answers 3 of 3');
      await expect(panel.locator('thead th')).toHaveText([/Field/, /bob/, /carol/, /dana/, 'Agreed']);
      await expect(panel.locator('tr[data-field=category] td')).toHaveText(['Bags', 'Bags', 'Shoes', 'Bags · 67%']);
      await expect(panel.locator('tr[data-field=items] td')).toHaveText(['1', '1', '2', '1 · 67%']);
      await expect(panel.locator('tr.split')).toHaveCount(3);
      await expect(sam.locator('.timeline')).toContainText("answered by carol; waits for the next person's answer");
      await expect(sam.locator('.timeline')).toContainText('done by dana, sent to review (the answers disagree)');
      await expect(sam.locator('.timeline')).toContainText('approved by alice: completed');
      await checkScreen(sam, 'a job answered by three, on its page', phone);
    }
  });

  test('three people hold one photo at once, each answering on their own, and a supervisor sees and takes back each', async ({ claimAs, jobs, api, openAs }) => {
    test.slow(); // three people claim at once
    const job = await jobs.create('image-labels', 'Label product photo P-30002');
    const held = [];
    for (const who of ['bob', 'carol', 'dana'] as Person[]) held.push(await claimAs(who, job));
    const [bob, , dana] = held;

    // sam sees each reservation: on the job's page, and in Supervise's live reservations.
    for (const phone of [false, true]) {
      const sam = await openAs('sam', 'A', phone ? { viewport: { width: 390, height: 844 } } : {});
      await sam.goto(`/jobs/${job.id}`);
      await expect(sam.getByTestId('held-by').locator('li')).toHaveText([/^bob, until/, /^carol, until/, /^dana, until/]);
      await expect(sam.getByTestId('assign-form')).toHaveCount(0);
      await checkScreen(sam, 'a job three people hold at once, on its page', phone);
      const supervise = new SupervisorPage(sam);
      await supervise.goto();
      await expect(supervise.reservation(job.id)).toHaveCount(3);
      await checkScreen(sam, 'the live reservations of a job three people hold at once', phone);
    }

    // bob answers: the others still hold it.
    await bob.page.getByRole('group', { name: /Category/ }).getByRole('radio', { name: 'Bags' }).check();
    await bob.page.getByRole('group', { name: /Brand logo visible/ }).getByRole('radio', { name: 'Yes' }).check();
    await bob.page.getByLabel(/Items in the picture/).fill('1');
    await bob.work.completeButton.click();
    await expect(bob.page.getByTestId('flash')).toContainText('1 of 3 answers are in; others are answering it too.');
    expect((await api.get(job)).state).toBe('reserved');

    // sam takes carol's back, from her row alone.
    const sam = await openAs('sam');
    const supervise = new SupervisorPage(sam);
    await supervise.goto();
    await supervise.confirmAction(supervise.reservation(job.id).filter({ hasText: 'carol' }), 'requeue');
    await expect(supervise.flash).toContainText('carol');
    await expect(supervise.reservation(job.id)).toHaveCount(1);
    await expect(supervise.reservation(job.id)).toContainText('dana');

    // dana answers: nobody holds it now, and it waits for a third person.
    await dana.page.getByRole('group', { name: /Category/ }).getByRole('radio', { name: 'Bags' }).check();
    await dana.page.getByRole('group', { name: /Brand logo visible/ }).getByRole('radio', { name: 'Yes' }).check();
    await dana.page.getByLabel(/Items in the picture/).fill('1');
    await dana.work.completeButton.click();
    await expect(dana.page.getByTestId('flash')).toContainText('2 of 3 answers are in; someone else answers it next.');
    const now = await api.get(job) as unknown as { state: string; answers: { by: string }[] };
    expect(now.state).toBe('ready');
    expect(now.answers.map((a) => a.by)).toEqual(['bob', 'dana']);
  });
});
