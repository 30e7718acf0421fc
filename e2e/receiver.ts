import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface Received {
  /** The webhook-id header: the event's id, the same on every attempt. */
  id: string;
  type: string;
  /** The id and title of the job or batch the event is about. */
  data: { id: string; title: string };
  /** Whether the signature is one of the secrets' (Standard Webhooks v1). */
  signed: boolean;
  /** The status the receiver answered. */
  status: number;
}

/**
 * A webhook receiver on the loopback, as a system that takes claimdesk's
 * events runs one: it checks each delivery's signature with the secrets it
 * was given, records it, and answers as the test says.
 */
export class Receiver {
  /** What the receiver answers next, and with what body. */
  status = 204;
  body = '';
  /** The secrets (whsec_…) it takes signatures of. */
  secrets: string[] = [];
  readonly received: Received[] = [];
  private readonly server = http.createServer((req, res) => this.serve(req, res));

  /** Starts the receiver; returns its URL, path appended. */
  async start(path = '/hook'): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The deliveries of the event so far. */
  of(id: string): Received[] {
    return this.received.filter((r) => r.id === id);
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse) {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? '');
      const event = JSON.parse(body) as { type: string; data: { id: string; title: string } };
      const status = this.status;
      this.received.push({ id, type: event.type, data: event.data, signed: this.verify(req, id, body), status });
      res.writeHead(status, { 'Content-Type': 'text/plain' });
      res.end(this.body);
    });
  }

  /** Whether a signature of the webhook-signature header is one of a secret's. */
  private verify(req: http.IncomingMessage, id: string, body: string): boolean {
    const ts = String(req.headers['webhook-timestamp'] ?? '');
    const sent = String(req.headers['webhook-signature'] ?? '').split(' ');
    return this.secrets.some((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      const want = Buffer.from(`v1,${createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64')}`);
      return sent.some((s) => s.length === want.length && timingSafeEqual(Buffer.from(s), want));
    });
  }
}
