import { defineConfig } from '@playwright/test';
import base from './playwright.config';

// `make screenshots`: the README's pictures of every page, at a phone's
// width and a laptop's, taken from the demo data (docs.shots.ts), on the
// same servers as the test suite.
export default defineConfig({
  ...base,
  retries: 0,
  projects: [
    { name: 'setup', testMatch: /.*\.setup\.ts/ },
    { name: 'screenshots', testMatch: /.*\.shots\.ts/, dependencies: ['setup'] },
  ],
});
