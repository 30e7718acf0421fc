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
  deadline?: string | null;
  result?: Record<string, unknown> | null;
  last_error?: string | null;
}

export interface NewJob {
  title: string;
  payload?: Record<string, unknown>;
  priority?: number;
  lease_seconds?: number;
  delay_seconds?: number;
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
}
