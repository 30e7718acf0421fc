import { expect, test } from './fixtures';
import { WorkPage } from './pages/WorkPage';
import { checkScreen } from './screen';

// content-moderation (seed): lease 45 s, 3 attempts, 2 extensions; bob and
// carol are granted it, and helpdesk-bot produces into it.

test('skip: the job goes to someone else, never back to me', async ({ claimAs, jobs, api }) => {
  const job = await jobs.create('content-moderation', 'Reported comment in a language I do not read');

  const { page: bob, home: bobHome, work: bobWork } = await claimAs('bob', job);

  // Skip means "not for me, the next one": bob lands on another job, or
  // home when nothing else is waiting for him.
  await bobWork.skip();
  await expect(bobHome.flash).toContainText(`Skipped “${job.title}”: someone else will get it.`);
  const skipped = await api.get(job);
  expect(skipped.state).toBe('ready');
  expect(skipped.attempts).toBe(0);
  const landed = new URL(bob.url()).pathname;
  expect(landed).not.toBe(`/jobs/${job.id}`);
  if (landed.startsWith('/jobs/')) {
    await expect(bobHome.flash).toContainText('Here is the next one.');
    await expect(bobWork.title).not.toHaveText(job.title);
    await bobWork.release();
    await expect(bobHome.flash).toContainText('Given back');
  } else {
    await expect(bobHome.flash).toContainText('Nothing else is waiting in content-moderation for you.');
  }

  // bob is not offered it again, though it is still first in line…
  const again = await bobHome.claimNextIn('content-moderation');
  expect(again).not.toBe(`/jobs/${job.id}`);
  if (again.startsWith('/jobs/')) {
    await expect(bobWork.title).not.toHaveText(job.title);
    await bobWork.release();
    await expect(bobHome.flash).toContainText('Given back');
  }

  // …but carol is.
  const { work: carolWork } = await claimAs('carol', job);
  await expect(carolWork.title).toHaveText(job.title);
});

test("more time is answered in place: offered from the start with a choice of amounts, it says how many are left, keeps the notes, and stops at the queue's limit", async ({
  claimAs,
  jobs,
  api,
}) => {
  const job = await jobs.create('content-moderation', 'Long thread to read before deciding');

  const { page: bob, work } = await claimAs('bob', job);
  const notes = bob.getByLabel('Notes');
  await notes.fill('Read half the thread; the rest looks like spam.');

  // More time is offered from the start, in words, with a choice of amounts
  // added to the time left: content-moderation allows two extensions.
  const latest = /the deadline can go no later than \d{1,2}:\d{2}:\d{2}(\s[AP]M)?\.$/;
  await expect(work.extendButton).toBeEnabled();
  await expect(work.extendHint).toContainText('Added to the time left. You may ask 2 more times;');
  await expect(work.extendHint).toHaveText(latest, { useInnerText: true });
  await work.extend('+5 min');
  await expect(bob.getByTestId('extended')).toHaveText(/^More time: the deadline is now \d{1,2}:\d{2}:\d{2}(\s[AP]M)?\.$/);
  await expect(work.countdown).toHaveText(/^5:\d\d$/);
  await expect(work.extendHint).toContainText('You may ask once more;');
  await work.extend('+15 min');
  await expect(work.countdown).toHaveText(/^20:\d\d$/);
  await expect(bob.getByTestId('no-extensions')).toBeVisible();
  await expect(work.extendButton).toHaveCount(0);
  // The page never left: what bob typed is still there.
  await expect(bob).toHaveURL(`/jobs/${job.id}`);
  await expect(notes).toHaveValue('Read half the thread; the rest looks like spam.');
  await checkScreen(bob, 'the work page with no more time to add', false);

  const held = await api.get(job);
  expect(held.state).toBe('reserved');
  expect(held.reserved_by).toBe('bob');
});

test("more time pressed in another tab, on the other instance: this tab's More time follows at once, from the server's answer", async ({
  openAs,
  claimAs,
  jobs,
}) => {
  const job = await jobs.create('content-moderation', 'Long thread read in two tabs');

  const { page: here, work } = await claimAs('bob', job);
  const there = new WorkPage(await openAs('bob', 'B'));
  await there.page.goto(`/jobs/${job.id}`);
  expect(await there.waitForJob()).toBe(job.id);

  // Both tabs offer More time; it is pressed there.
  await expect(work.extendHint).toContainText('You may ask 2 more times;');
  await there.extend('+5 min');
  await expect(there.page.getByTestId('extended')).toBeVisible();

  // Here the notice brings the new deadline, and More time's box comes
  // afresh from the server: one extension left.
  await expect(work.extendHint).toContainText('You may ask once more;');
  await expect(work.countdown).toHaveText(/^5:\d\d$/);
  await expect(here).toHaveURL(`/jobs/${job.id}`);
});

test('reporting a failure spends an attempt and puts the job back in line', async ({ claimAs, jobs, api }) => {
  const job = await jobs.create('content-moderation', 'Image link is dead, cannot review');

  const { page: bob, home, work } = await claimAs('bob', job);

  await work.fail('The image returns 404 on the CDN.');
  await expect(bob).toHaveURL('/');
  await expect(home.flash).toHaveText(`“${job.title}” is back in line for someone else: 1 of 3 attempts used.`);

  const failed = await api.get(job);
  expect(failed.state).toBe('ready');
  expect(failed.attempts).toBe(1);
  expect(failed.last_error).toBe('The image returns 404 on the CDN.');
});

test('when the deadline passes, the work page says so and disables its buttons', async ({ claimAs, jobs }) => {
  const job = await jobs.create('content-moderation', 'Quick look (two-second lease)', { lease_seconds: 2 });

  const { work } = await claimAs('bob', job);
  await expect(work.ended).toBeHidden();

  await expect(work.ended).toBeVisible({ timeout: 10_000 });
  await expect(work.ended).toContainText('This reservation ended: your time ran out.');
  await expect(work.countdown).toHaveText('expired');
  for (const button of [work.completeButton, work.releaseButton, work.skipButton, work.extendButton]) {
    await expect(button).toBeDisabled();
  }
});

test('complete & next, the default button, completes the job and opens the next one in one step', async ({ claimAs, jobs, api }) => {
  const first = await jobs.create('content-moderation', 'First of two in a row');
  const second = await jobs.create('content-moderation', 'Second of two in a row');

  const { page: bob, home, work } = await claimAs('bob', first);
  await expect(work.completeNextButton).toHaveAccessibleName('Complete & next');

  await work.completeAndNext('Looked fine');
  await expect(bob).toHaveURL(`/jobs/${second.id}`);
  await expect(home.flash).toHaveText(`Completed “${first.title}”. Here is the next one.`);
  await expect(work.title).toHaveText(second.title);
  await expect(work.countdown).toBeVisible();
  const done = await api.get(first);
  expect(done.state).toBe('completed');
  expect(done.completed_by).toBe('bob');
  expect((await api.get(second)).reserved_by).toBe('bob');

  await work.complete('Also fine');
  await expect(home.flash).toContainText('Completed. Nice work.');
  expect((await api.get(second)).state).toBe('completed');
});
