import path from 'node:path';

/**
 * The suite runs two claimdesk web instances over one store (one private
 * redis-server): A, where the tests go by default, and B, for what must
 * cross from one instance to the other (live notices travel through Redis).
 * CLAIMDESK_E2E_PORT moves A (and B, one above it) off 18080, so that two
 * checkouts can run the suite at once.
 */
export const PORT = Number(process.env.CLAIMDESK_E2E_PORT || 18080);
export const BASE_URL = `http://127.0.0.1:${PORT}`;
export const PORT_B = PORT + 1;
export const BASE_URL_B = `http://127.0.0.1:${PORT_B}`;

/** Scratch directory the web server runs in (its private Redis lives under it). */
export const RUN_DIR = path.join(__dirname, '.run');

/** Demo people from seed/users.json. */
export const PEOPLE = {
  alice: {
    password: 'alice-demo-pass',
    role: 'operator',
    queues: ['invoice-review', 'support-escalations', 'image-labels'],
  },
  bob: {
    password: 'bob-demo-pass',
    role: 'operator',
    queues: ['support-escalations', 'content-moderation', 'image-labels'],
  },
  carol: {
    password: 'carol-demo-pass',
    role: 'operator',
    queues: ['content-moderation', 'address-verification', 'invoice-review', 'image-labels'],
  },
  dana: {
    password: 'dana-demo-pass',
    role: 'operator',
    queues: ['invoice-review', 'support-escalations', 'content-moderation', 'address-verification', 'image-labels'],
  },
  sam: { password: 'sam-demo-pass', role: 'supervisor', queues: [] as string[] },
} as const;

export type Person = keyof typeof PEOPLE;

/** Producer API tokens from seed/users.json. */
export const PRODUCER_TOKENS = {
  billing: 'cdt_demo_billing7f3a9c21e84b6d05', // invoice-review, address-verification
  helpdesk: 'cdt_demo_helpdesk2c8e61b4f09a7d3', // support-escalations, content-moderation
  catalog: 'cdt_demo_catalog5d1e9a7c3b2f0846', // image-labels
} as const;

export type QueueName =
  | 'invoice-review'
  | 'support-escalations'
  | 'content-moderation'
  | 'address-verification'
  | 'image-labels';

/** Which producer may enqueue into (and read) which queue. */
export const QUEUE_TOKEN: Record<QueueName, string> = {
  'invoice-review': PRODUCER_TOKENS.billing,
  'address-verification': PRODUCER_TOKENS.billing,
  'support-escalations': PRODUCER_TOKENS.helpdesk,
  'content-moderation': PRODUCER_TOKENS.helpdesk,
  'image-labels': PRODUCER_TOKENS.catalog,
};

/** Where the setup project keeps each person's logged-in browser state. */
export function authFile(person: Person): string {
  return path.join(__dirname, '.auth', `${person}.json`);
}
