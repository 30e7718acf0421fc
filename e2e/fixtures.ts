import { test as base, expect, type Page, type TestInfo } from '@playwright/test';
import { ProducerApi, type Job, type NewJob } from './api';
import { authFile, BASE_URL, BASE_URL_B, PEOPLE, type Person, type QueueName } from './constants';
import { LoginPage } from './pages/LoginPage';
import { OperatorHomePage } from './pages/OperatorHomePage';
import { WorkPage } from './pages/WorkPage';

export { expect };

/** Jobs a test enqueues for itself: unique titles, top priority. */
export interface JobFactory {
  /** Enqueues a job at priority 100 (claimed before any seed job) with a unique title built from label. */
  create(queue: QueueName, label: string, extra?: Partial<NewJob>): Promise<Job>;
}

interface Fixtures {
  api: ProducerApi;
  jobs: JobFactory;
  /**
   * Opens a page in a new browser context logged in as that person. On
   * instance A (the default) with the session the setup project saved; on
   * instance B in a fresh context whose baseURL is B, logged in through
   * B's own login page. Options set the browser's time zone and locale
   * (default: the machine's).
   */
  openAs: (person: Person, instance?: Instance, options?: BrowserOptions) => Promise<Page>;
  /**
   * Opens a page as that person (openAs, on instance A), claims the next
   * job of the job's queue from their home, and checks that it is that
   * job: its work page, and the home for what comes after.
   */
  claimAs: (person: Person, job: Job, options?: BrowserOptions) => Promise<Claimed>;
}

/** A person's page on the work page of a job they just claimed. */
export interface Claimed {
  page: Page;
  home: OperatorHomePage;
  work: WorkPage;
}

/** How the browser of a person is set up, beyond who is logged in. */
export interface BrowserOptions {
  /** An IANA time zone, e.g. "Asia/Kolkata": the zone pages show local times in. */
  timezoneId?: string;
  locale?: string;
  /** The window's size (default: the config's laptop size). */
  viewport?: { width: number; height: number };
}

/** The suite's two web instances over one store (see playwright.config.ts). */
export type Instance = 'A' | 'B';

let counter = 0;

/** A title no other test (or retry, or run) uses. */
export function uniqueTitle(label: string, info: TestInfo): string {
  counter += 1;
  const salt = `${Date.now().toString(36)}${counter}r${info.retry}`;
  return `${label} [e2e ${salt}]`;
}

export const test = base.extend<Fixtures>({
  api: async ({ request }, use) => {
    await use(new ProducerApi(request));
  },

  jobs: async ({ api, playwright }, use, testInfo) => {
    const created: Job[] = [];
    await use({
      async create(queue, label, extra = {}) {
        const job = await api.enqueue(queue, {
          title: uniqueTitle(label, testInfo),
          priority: 100,
          payload: { source: 'e2e', test: testInfo.title },
          ...extra,
        });
        created.push(job);
        return job;
      },
    });

    // Leave nothing behind that a later test could claim instead of its own
    // job: a released or force-released job keeps its place at the head of
    // the line. Ready jobs are canceled by their producer, held ones by sam.
    let sam: Awaited<ReturnType<typeof playwright.request.newContext>> | undefined;
    try {
      for (const job of created) {
        const now = await api.get(job);
        if (now.state === 'ready' || now.state === 'scheduled') {
          expect(await api.cancel(job)).toBe(200);
        } else if (now.state === 'reserved') {
          sam ??= await playwright.request.newContext({ baseURL: BASE_URL, storageState: authFile('sam') });
          const html = await (await sam.get('/supervisor')).text();
          const csrf = html.match(/data-csrf="([^"]+)"/)?.[1];
          if (!csrf) throw new Error('no CSRF token on /supervisor for sam');
          const res = await sam.post(`/supervisor/jobs/${job.id}/cancel`, {
            headers: { 'X-CSRF-Token': csrf },
            maxRedirects: 0,
          });
          expect(res.status(), `cleanup cancel of ${job.id}`).toBe(303);
        }
      }
    } finally {
      await sam?.dispose();
    }
  },

  openAs: async ({ browser }, use) => {
    const contexts: Awaited<ReturnType<typeof browser.newContext>>[] = [];
    await use(async (person, instance = 'A', options = {}) => {
      if (instance === 'A') {
        const context = await browser.newContext({ ...options, baseURL: BASE_URL, storageState: authFile(person) });
        contexts.push(context);
        return context.newPage();
      }
      const context = await browser.newContext({ ...options, baseURL: BASE_URL_B });
      contexts.push(context);
      const page = await context.newPage();
      const login = new LoginPage(page);
      await login.goto();
      await login.logIn(person, PEOPLE[person].password);
      await expect(page.getByTestId('current-user')).toContainText(person);
      expect(new URL(page.url()).origin, `${person} is on instance B`).toBe(BASE_URL_B);
      return page;
    });
    for (const context of contexts) await context.close();
  },

  claimAs: async ({ openAs }, use) => {
    await use(async (person, job, options) => {
      const page = await openAs(person, 'A', options);
      const home = new OperatorHomePage(page);
      const work = new WorkPage(page);
      await home.goto();
      await home.claimNextIn(job.queue);
      expect(await work.waitForJob(), `${person} claimed ${job.title}`).toBe(job.id);
      return { page, home, work };
    });
  },
});
