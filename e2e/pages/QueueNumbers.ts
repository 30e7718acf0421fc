import type { Locator, Page } from '@playwright/test';

type State = 'ready' | 'scheduled' | 'reserved' | 'completed' | 'dead' | 'canceled';
type Series = 'Ready' | 'Claims' | 'Completed' | 'Dead' | 'Oldest wait';

/** What a queue's page and the supervisor's overview say in numbers: the tabs, the day's charts, dead today. */
export class QueueNumbers {
  constructor(readonly page: Page) {}

  /** The count on a state's tab of the queue's page. */
  tabCount(state: State): Locator {
    return this.page.getByTestId(`tab-${state}`).getByTestId('tab-count');
  }

  /** The dead tab's "N today", there only when some died today. */
  deadTodayTab(): Locator {
    return this.page.getByTestId('tab-dead').getByTestId('dead-today');
  }

  /** A chart of the queue's day: its figure. */
  figure(series: Series): Locator {
    return this.page.getByTestId(`spark-${series}`);
  }

  /** The figure's total ("9 now", "302 in 24 h"). */
  total(series: Series): Locator {
    return this.figure(series).getByTestId('spark-total');
  }

  /** The chart itself: focusable, its value the quarter hour chosen. */
  chart(series: Series): Locator {
    return this.figure(series).getByRole('slider');
  }

  /** The line under the chart: the peak, or the quarter hour pointed at. */
  readout(series: Series): Locator {
    return this.figure(series).getByTestId('readout');
  }

  /** The overview's "Dead today" cell of a queue. */
  deadTodayCell(queue: string): Locator {
    return this.page.getByTestId(`stats-${queue}`).getByTestId('dead-today');
  }

  /** The overview's "Dead in all" cell of a queue. */
  deadCell(queue: string): Locator {
    return this.page.getByTestId(`stats-${queue}`).locator('[data-count="dead"]');
  }
}
