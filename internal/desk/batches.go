package desk

import (
	"context"

	"claimdesk/internal/audit"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// Batches: a producer's request of many jobs, followed as one. Producers
// of the batch's queue and supervisors make, fill, seal, read and cancel
// them.

// CreateBatch creates a batch in the queue with its first jobs.
func (d *Desk) CreateBatch(ctx context.Context, a Actor, queue string, nb tasks.NewBatch) (*tasks.Batch, []tasks.Enqueued, error) {
	if err := d.MayProduce(ctx, a, queue); err != nil {
		return nil, nil, err
	}
	if err := d.routable(ctx, queue, nb.Jobs, true); err != nil {
		return nil, nil, err
	}
	return d.tasks.CreateBatch(ctx, queue, a.Name(), nb)
}

// Batch returns the batch, if a may see its queue.
func (d *Desk) Batch(ctx context.Context, a Actor, id string) (*tasks.Batch, error) {
	if err := need(a, users.Producer, users.Supervisor); err != nil {
		return nil, err
	}
	b, err := d.tasks.GetBatch(ctx, id)
	if err != nil {
		return nil, err
	}
	if !a.canSee(b.Queue) {
		return nil, forbidden("the batch's queue, %s, is not granted to you", b.Queue)
	}
	return b, nil
}

// AddToBatch adds jobs to an open batch.
func (d *Desk) AddToBatch(ctx context.Context, a Actor, id string, jobs []tasks.NewJob) ([]tasks.Enqueued, error) {
	b, err := d.Batch(ctx, a, id)
	if err != nil {
		return nil, err
	}
	if err := d.routable(ctx, b.Queue, jobs, true); err != nil {
		return nil, err
	}
	_, out, err := d.tasks.AddToBatch(ctx, id, a.Name(), jobs)
	return out, err
}

// SealBatch closes an open batch to new jobs: it ends once they are done.
func (d *Desk) SealBatch(ctx context.Context, a Actor, id string) (*tasks.Batch, error) {
	if _, err := d.Batch(ctx, a, id); err != nil {
		return nil, err
	}
	return d.tasks.SealBatch(ctx, id)
}

// CancelBatch cancels the batch: its jobs waiting are canceled, those in
// progress may still finish.
func (d *Desk) CancelBatch(ctx context.Context, a Actor, id string) (*tasks.Batch, error) {
	if _, err := d.Batch(ctx, a, id); err != nil {
		return nil, err
	}
	b, err := d.tasks.CancelBatch(ctx, id, a.Name())
	if err != nil {
		return nil, err
	}
	d.record(ctx, a, audit.BatchCanceled, b.ID, audit.BatchDetail(b))
	return b, nil
}
