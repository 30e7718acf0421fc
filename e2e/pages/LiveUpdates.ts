import { expect, type Frame, type Locator, type Page } from '@playwright/test';

type LiveState = 'connecting' | 'live' | 'reconnecting';

/** What happened to the live-update sockets of a page since watchSockets. */
export interface SocketWatch {
  /** Sockets to /ws the page opened: a reconnect opens another. */
  opened: number;
  /** Those that closed, for whatever reason (a frame the browser could not read, say). */
  closed: number;
  /** Errors the browser reported on them. */
  errors: string[];
  /** Frames received on them: the snapshot, then each notice. */
  framesReceived: number;
}

/**
 * What every page's topbar has for live updates: the connection indicator
 * (data-state connecting | live | reconnecting), and a way to prove that a
 * change on the page came over the websocket rather than from a reload.
 */
export class LiveUpdates {
  readonly indicator: Locator;

  constructor(readonly page: Page) {
    this.indicator = page.getByTestId('live');
  }

  async expectState(state: LiveState, options?: { timeout?: number }) {
    await expect(this.indicator).toHaveAttribute('data-state', state, options);
  }

  /** Waits until the websocket has delivered its snapshot: from now on notices reach the page. */
  async waitUntilLive() {
    await this.expectState('live');
  }

  /**
   * Starts counting the page's sockets to /ws. Call it before the page
   * opens its socket (before goto): the watch then sees every socket.
   */
  watchSockets(): SocketWatch {
    const watch: SocketWatch = { opened: 0, closed: 0, errors: [], framesReceived: 0 };
    this.page.on('websocket', (ws) => {
      if (new URL(ws.url()).pathname !== '/ws') return;
      watch.opened += 1;
      ws.on('framereceived', () => {
        watch.framesReceived += 1;
      });
      ws.on('socketerror', (error) => watch.errors.push(error));
      ws.on('close', () => {
        watch.closed += 1;
      });
    });
    return watch;
  }

  /**
   * Marks the document now shown; the returned check fails if the page was
   * reloaded or navigated since (a new document would not carry the mark,
   * and the main frame would have navigated).
   */
  async markDocument(): Promise<() => Promise<void>> {
    const mark = `e2e-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    await this.page.evaluate((m) => {
      (window as unknown as { __e2eMark?: string }).__e2eMark = m;
    }, mark);
    const navigations: string[] = [];
    const onNavigated = (frame: Frame) => {
      if (frame === this.page.mainFrame()) navigations.push(frame.url());
    };
    this.page.on('framenavigated', onNavigated);
    return async () => {
      this.page.off('framenavigated', onNavigated);
      expect(navigations, 'the page navigated').toEqual([]);
      const still = await this.page.evaluate(() => (window as unknown as { __e2eMark?: string }).__e2eMark);
      expect(still, 'the document was replaced (reload or navigation)').toBe(mark);
    };
  }
}
