import { expect, type APIRequestContext } from '@playwright/test';
import { QUEUE_TOKEN, type QueueName } from './constants';

/** A job as the JSON API returns it (API.md, "Job object"). */
export interface Job {
  id: string;
  queue: QueueName;
  title: string;
  payload: unknown;
  priority: number;
  state: 'ready' | 'scheduled' | 'reserved' | 'completed' | 'dead' | 'canceled';
  attempts: number;
  max_attempts: number;
  reserved_by?: string | null;
  completed_by?: string | null;
  deadline?: string | null;
  result?: Record<string, unknown> | null;
  last_error?: string | null;
  skipped_by?: string[] | null;
  batch_id?: string | null;
}

export interface NewJob {
  title: string;
  payload?: Record<string, unknown>;
  priority?: number;
  lease_seconds?: number;
  delay_seconds?: number;
  max_attempts?: number;
}

/** A batch as the JSON API returns it (API.md, "Batches"). */
export interface Batch {
  id: string;
  queue: QueueName;
  title: string;
  priority: number;
  max_concurrent: number | null;
  state: 'open' | 'sealed' | 'completed' | 'completed_with_failures' | 'canceled';
  total: number;
  ready: number;
  reserved: number;
  completed: number;
  dead: number;
  canceled: number;
  created_at: string;
  finished_at: string | null;
}

export interface NewBatch {
  title: string;
  priority?: number;
  max_concurrent?: number;
  /** An open batch takes more jobs until it is sealed. */
  open?: boolean;
  jobs: NewJob[];
}

function bearer(queue: QueueName) {
  return { Authorization: `Bearer ${QUEUE_TOKEN[queue]}` };
}

/** The producers' side of the JSON API: what billing-bot and helpdesk-bot may do. */
export class ProducerApi {
  constructor(private readonly request: APIRequestContext) {}

  async enqueue(queue: QueueName, job: NewJob): Promise<Job> {
    const res = await this.request.post(`/api/v1/queues/${queue}/jobs`, { headers: bearer(queue), data: job });
    expect(res.status(), await res.text()).toBe(201);
    return (await res.json()).job as Job;
  }

  async get(job: Pick<Job, 'id' | 'queue'>): Promise<Job> {
    const res = await this.request.get(`/api/v1/jobs/${job.id}`, { headers: bearer(job.queue) });
    expect(res.status(), await res.text()).toBe(200);
    return (await res.json()) as Job;
  }

  /** Cancels a ready or scheduled job; returns the HTTP status (409 when reserved or finished). */
  async cancel(job: Pick<Job, 'id' | 'queue'>): Promise<number> {
    const res = await this.request.delete(`/api/v1/jobs/${job.id}`, { headers: bearer(job.queue) });
    return res.status();
  }

  async createBatch(queue: QueueName, batch: NewBatch): Promise<{ batch: Batch; jobs: Job[] }> {
    const res = await this.request.post(`/api/v1/queues/${queue}/batches`, { headers: bearer(queue), data: batch });
    expect(res.status(), await res.text()).toBe(201);
    return (await res.json()) as { batch: Batch; jobs: Job[] };
  }

  /** Adds jobs to an open batch. */
  async addToBatch(batch: Pick<Batch, 'id' | 'queue'>, jobs: NewJob[]): Promise<Job[]> {
    const res = await this.request.post(`/api/v1/batches/${batch.id}/jobs`, { headers: bearer(batch.queue), data: { jobs } });
    expect(res.status(), await res.text()).toBe(201);
    return (await res.json()).jobs as Job[];
  }

  async sealBatch(batch: Pick<Batch, 'id' | 'queue'>): Promise<Batch> {
    const res = await this.request.post(`/api/v1/batches/${batch.id}/seal`, { headers: bearer(batch.queue) });
    expect(res.status(), await res.text()).toBe(200);
    return (await res.json()) as Batch;
  }

  /** The batch now, or (with wait) once it ended or after that many seconds. */
  async getBatch(batch: Pick<Batch, 'id' | 'queue'>, options: { wait?: number } = {}): Promise<Batch> {
    const query = options.wait ? `?wait=${options.wait}` : '';
    const res = await this.request.get(`/api/v1/batches/${batch.id}${query}`, {
      headers: bearer(batch.queue),
      timeout: ((options.wait ?? 0) + 10) * 1000,
    });
    expect(res.status(), await res.text()).toBe(200);
    return (await res.json()) as Batch;
  }

  /** Cancels a batch: its jobs not reserved are canceled. */
  async cancelBatch(batch: Pick<Batch, 'id' | 'queue'>): Promise<Batch> {
    const res = await this.request.delete(`/api/v1/batches/${batch.id}`, { headers: bearer(batch.queue) });
    expect(res.status(), await res.text()).toBe(200);
    return (await res.json()) as Batch;
  }
}

/** A claim made through the JSON API: the job and the reservation token only the claimer gets. */
export interface Claim {
  job: Job;
  token: string;
}

/**
 * The operators' side of the JSON API, as a logged-in browser would call it:
 * the session cookie of the page's context plus the session's CSRF token.
 * (The demo operators have no API tokens.)
 */
export class OperatorApi {
  private csrf?: string;

  constructor(private readonly request: APIRequestContext) {}

  private async headers() {
    if (!this.csrf) {
      const html = await (await this.request.get('/')).text();
      this.csrf = html.match(/data-csrf="([^"]+)"/)?.[1];
      if (!this.csrf) throw new Error('no CSRF token on / for this operator');
    }
    return { 'X-CSRF-Token': this.csrf };
  }

  /** Claims the next job of the queue; null when nothing is ready (204). */
  async claim(queue: QueueName): Promise<Claim | null> {
    const res = await this.request.post(`/api/v1/queues/${queue}/claim`, { headers: await this.headers() });
    if (res.status() === 204) return null;
    expect(res.status(), await res.text()).toBe(200);
    const body = await res.json();
    return { job: body.job as Job, token: body.reservation.token as string };
  }

  async complete(claim: Claim, result: Record<string, unknown> = {}): Promise<Job> {
    const res = await this.request.post(`/api/v1/jobs/${claim.job.id}/complete`, {
      headers: await this.headers(),
      data: { token: claim.token, result },
    });
    expect(res.status(), await res.text()).toBe(200);
    return (await res.json()) as Job;
  }

  /** Reports that the job cannot be done: spends an attempt (dead once they are used up). */
  async fail(claim: Claim, reason: string): Promise<Job> {
    const res = await this.request.post(`/api/v1/jobs/${claim.job.id}/fail`, {
      headers: await this.headers(),
      data: { token: claim.token, reason },
    });
    expect(res.status(), await res.text()).toBe(200);
    return (await res.json()) as Job;
  }

  /** Moves the reservation's deadline to seconds from now (More time). */
  async extend(claim: Claim, seconds: number): Promise<void> {
    const res = await this.request.post(`/api/v1/jobs/${claim.job.id}/extend`, {
      headers: await this.headers(),
      data: { token: claim.token, seconds },
    });
    expect(res.status(), await res.text()).toBe(200);
  }

  /** Gives the job back: it keeps its place in line. */
  async release(claim: Claim): Promise<Job> {
    const res = await this.request.post(`/api/v1/jobs/${claim.job.id}/release`, {
      headers: await this.headers(),
      data: { token: claim.token },
    });
    expect(res.status(), await res.text()).toBe(200);
    return (await res.json()) as Job;
  }
}

/**
 * Fails the job on each of its attempts, each by the next of the
 * operators (a failed job is not offered back to whoever reported it),
 * until it is dead; why says each attempt's reason (1, 2, …).
 */
export async function failUntilDead(operators: OperatorApi[], job: Job, why: (attempt: number) => string): Promise<void> {
  expect(operators, `one operator for each of ${job.title}'s attempts`).toHaveLength(job.max_attempts);
  for (const [i, op] of operators.entries()) {
    const attempt = i + 1;
    const claim = await op.claim(job.queue);
    expect(claim?.job.id, `claim ${attempt}`).toBe(job.id);
    const after = await op.fail(claim!, why(attempt));
    expect(after.state).toBe(attempt < job.max_attempts ? 'ready' : 'dead');
  }
}
