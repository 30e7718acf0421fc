import { expect, test } from './fixtures';
import { SCREENS, checkScreen } from './screen';

// content-moderation (seed): lease 45 s, 3 attempts, 2 extensions; bob and
// carol are granted it.

test("can't be done: the job goes to someone else, who reads the earlier attempt above the form", async ({ claimAs, jobs, api }) => {
  // Three people's pages, the last at two screen sizes: longer than most.
  test.slow();
  const job = await jobs.create('content-moderation', 'Screenshot link of a reported post');

  const { page: bob, home: bobHome, work: bobWork } = await claimAs('bob', job);
  await expect(bob.getByTestId('earlier-attempts')).toHaveCount(0); // the first attempt

  // f opens "Can't be done…" at its reason.
  await bob.keyboard.press('f');
  await expect(bob.getByLabel('Why')).toBeFocused();
  await bob.getByLabel('Why').fill('Scan URL 404s');
  await bobWork.failButton.click();
  await expect(bob).toHaveURL('/');
  await expect(bobHome.flash).toHaveText(`“${job.title}” is back in line for someone else: 1 of 3 attempts used.`);
  // My recent work links to it and says why.
  const row = bob.getByTestId('recent-work').locator(`li[data-job-id="${job.id}"]`);
  await expect(row.getByTestId('outcome')).toHaveText("Can't be done");
  await expect(row.getByTestId('recent-brief')).toHaveText('Scan URL 404s');
  await expect(row.getByTestId('recent-link')).toHaveAttribute('href', `/jobs/${job.id}`);

  // bob's next claim does not hand it back to him.
  const next = await bobHome.claimNextIn('content-moderation');
  expect(next).not.toBe(`/jobs/${job.id}`);
  if (next !== '/') await bobWork.release();

  for (const screen of SCREENS) {
    const { page: carol, work: carolWork } = await claimAs('carol', job, { viewport: screen.viewport });
    // bob's failure; on the second screen also carol's give-back of the first.
    const earlier = carol.getByTestId('earlier-attempt').filter({ hasText: 'bob' });
    await expect(earlier).toHaveCount(1);
    await expect(earlier.getByTestId('attempt-why')).toHaveText("can't be done: Scan URL 404s");
    await expect(earlier.locator('time')).toHaveAttribute('datetime', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    await expect(carol.getByTestId('job-attempt')).toHaveText('attempt 2 of 3');
    // The meta line never breaks inside a group.
    const meta = carol.getByTestId('job-attempt');
    expect(await meta.evaluate((el) => el.getClientRects().length)).toBe(1);
    // More time: from the start, a choice of amounts.
    for (const choice of ['+5 min', '+15 min', '+30 min']) {
      await expect(carol.getByRole('button', { name: choice })).toBeEnabled();
    }
    await checkScreen(carol, `the work page with an earlier attempt (${screen.name})`, screen.name === 'phone');
    await carol.screenshot({ path: test.info().outputPath(`work-attempts-${screen.viewport.width}.png`), fullPage: true });
    // Closed only once the give-back has landed: a page closed while its
    // form is on the way may leave the job held, or the close waiting.
    await carolWork.release();
    await expect(carol).toHaveURL('/');
    await carol.context().close();
  }

  const back = await api.get(job);
  expect(back.state).toBe('ready');
  expect(back.skipped_by).toEqual(['bob']);
});

test('skip has its shortcut, s', async ({ claimAs, jobs }) => {
  const job = await jobs.create('content-moderation', 'Comment thread to skip by key');
  const { page: bob, home, work } = await claimAs('bob', job);
  await expect(work.skipButton).toHaveAttribute('aria-keyshortcuts', 's');
  await bob.keyboard.press('s');
  await expect(bob).not.toHaveURL(`/jobs/${job.id}`);
  await expect(home.flash).toContainText(`Skipped “${job.title}”`);
});
