package desk

import (
	"context"
	"time"

	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
)

// recordTimeout bounds the writing of what a change keeps of people.
const recordTimeout = 5 * time.Second

// recordWork writes what the Team page and "My recent work" keep of a
// change, whoever made it (a request, the command line, cron's expiries):
// a tasks.Observer, so on the change's path, before the change is
// answered; not with its notices, which may be dropped. A failure is
// logged: the change itself stands.
func (d *Desk) recordWork(ctx context.Context, fx tasks.Effects) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := notify.RecordWork(ctx, d.rdb, fx); err != nil {
		d.trouble("recent work and last action not recorded", err, "queue", fx.Queue)
	}
}
