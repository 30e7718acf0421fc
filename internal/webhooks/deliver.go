package webhooks

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"claimdesk/internal/storeerr"
	"claimdesk/internal/tasks"

	"github.com/prometheus/client_golang/prometheus"
)

// How the deliverers pace themselves.
const (
	// perEndpoint bounds one instance's attempts under way to one
	// endpoint.
	perEndpoint = 8
	// outboxPage is how many events one read of an outbox takes.
	outboxPage = 100
	// DefaultTakeover is how long an event handed to an instance may
	// wait unacknowledged before another instance takes it: its reader
	// died.
	DefaultTakeover = 30 * time.Second
	// leaseSlack is how long, beyond the timeout, an attempt's delivery
	// stays leased to its deliverer before another may try again.
	leaseSlack = 30 * time.Second
	// sweep is how often a deliverer reads every outbox an endpoint
	// listens to, and every endpoint's schedule, for what nobody told it
	// of: events of changes made by other processes, retries come due.
	// Its own changes it hands on at once.
	sweep = time.Second
	// forgetReaders is how long an outbox's reader that holds no event
	// may be idle before it is dropped from the group: every instance
	// that stopped is one.
	forgetReaders = time.Hour
	// refreshEvery is how often a deliverer reads the registry anew.
	refreshEvery = 2 * time.Second
	// settleRetry is the first wait before recording an attempt's outcome
	// again when the store could not answer; it doubles up to 1 s.
	settleRetry = 50 * time.Millisecond
)

// Config is what a Deliverer works with. Store, Tasks, Egress, Instance
// and Log are required.
type Config struct {
	Store  *Store
	Tasks  *tasks.Store
	Egress *Egress
	// Schedule is the wait before each retry (DefaultSchedule when nil).
	Schedule []time.Duration
	// Instance names this deliverer among those reading the outboxes.
	Instance string
	Log      *slog.Logger
	// May reports whether the owner may still see the queue's jobs, for
	// each event: an endpoint receives only what its owner may see. nil:
	// every owner may.
	May func(ctx context.Context, owner, queue string) bool
	// Registerer, when set, takes the deliverer's metrics.
	Registerer prometheus.Registerer
	// Takeover is how long an event handed to another instance may wait
	// unacknowledged before this one takes it (DefaultTakeover when 0).
	Takeover time.Duration
}

// Deliverer hands the outboxes' events on to the endpoints that want them
// and delivers them, signed, retried on the schedule. Every instance runs
// one; they share the work through the outboxes' consumer group and the
// deliveries' leases.
type Deliverer struct {
	cfg    Config
	fanout chan struct{} // a change published events
	// lookedOver is when handOn last looked for events whose reader died.
	lookedOver time.Time
	send       chan struct{} // deliveries are due
	endpoints  atomic.Pointer[[]record]
	troubles   *storeerr.Burst

	mu       sync.Mutex
	changed  map[string]bool // queues this instance published events of since handOn last read them
	inflight map[string]int  // attempts under way, by endpoint
	wg       sync.WaitGroup

	deliveries *prometheus.CounterVec
	first      prometheus.Histogram
}

// NewDeliverer returns a deliverer; Run runs it.
func NewDeliverer(cfg Config) *Deliverer {
	if cfg.Schedule == nil {
		cfg.Schedule = DefaultSchedule
	}
	cfg.Takeover = cmp.Or(cfg.Takeover, DefaultTakeover)
	if cfg.May == nil {
		cfg.May = func(context.Context, string, string) bool { return true }
	}
	d := &Deliverer{cfg: cfg, fanout: make(chan struct{}, 1), send: make(chan struct{}, 1),
		troubles: storeerr.NewBurst(cfg.Log, "webhook rounds failed"), inflight: map[string]int{}, changed: map[string]bool{},
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimdesk_webhook_deliveries_total",
			Help: "Webhook delivery attempts, by result: succeeded (2xx), failed (any other answer or none), gone (410).",
		}, []string{"result"}),
		first: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "claimdesk_webhook_first_attempt_seconds",
			Help:    "Time from a change to the first attempt to deliver its event.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(d.deliveries, d.first, &lagCollector{d: d})
	}
	return d
}

// Observe is a tasks.Observer: a change that ended a job or a batch may
// have published events, which this instance hands on at once.
func (d *Deliverer) Observe(_ context.Context, fx tasks.Effects) {
	for _, t := range fx.Transitions {
		if t.To.Terminal() {
			d.mu.Lock()
			d.changed[fx.Queue] = true
			d.mu.Unlock()
			poke(d.fanout)
			return
		}
	}
}

// Changed tells the deliverer that the registry changed here: it reads it
// anew at once.
func (d *Deliverer) Changed(ctx context.Context) {
	if err := d.refresh(ctx); err != nil {
		d.troubles.Add("webhooks: reading the registry", err)
	}
	poke(d.send)
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for the attempts under way.
func (d *Deliverer) Run(ctx context.Context) {
	if err := d.refresh(ctx); err != nil {
		d.troubles.Add("webhooks: reading the registry", err)
	}
	var loops sync.WaitGroup
	loops.Add(3)
	go func() {
		defer loops.Done()
		d.every(ctx, refreshEvery, nil, func(ctx context.Context, _ bool) error { return d.refresh(ctx) })
	}()
	go func() { defer loops.Done(); d.every(ctx, sweep, d.fanout, d.handOn) }()
	go func() { defer loops.Done(); d.every(ctx, sweep, d.send, d.deliver) }()
	loops.Wait()
	d.wg.Wait()
}

// every runs fn every period (swept true), and at once when poked.
func (d *Deliverer) every(ctx context.Context, period time.Duration, poked chan struct{}, fn func(ctx context.Context, swept bool) error) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		swept := false
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			swept = true
		case <-poked:
		}
		if err := fn(ctx, swept); err != nil && ctx.Err() == nil {
			d.troubles.Add("webhooks", err)
		}
	}
}

// refresh reads the registry anew.
func (d *Deliverer) refresh(ctx context.Context) error {
	all, err := d.cfg.Store.records(ctx)
	if err != nil {
		return err
	}
	d.endpoints.Store(&all)
	return nil
}

func (d *Deliverer) registry() []record {
	if p := d.endpoints.Load(); p != nil {
		return *p
	}
	return nil
}

// Disabled counts the endpoints disabled for what their receivers did
// (gone or failing; not those paused), as the deliverer last read the
// registry: every refreshEvery, and at once after a change made here. It
// costs no call to Redis, so every page may show it.
func (d *Deliverer) Disabled() int {
	n := 0
	for _, ep := range d.registry() {
		if !ep.Enabled && ep.DisabledReason != DisabledPaused {
			n++
		}
	}
	return n
}

// handOn files the events of outboxes as deliveries to the endpoints that
// want them, then acknowledges them: the outboxes of the queues this
// instance changed since, or on a sweep every outbox an endpoint listens
// to; every half Takeover, with the events whose reader died.
func (d *Deliverer) handOn(ctx context.Context, swept bool) error {
	d.mu.Lock()
	changed := d.changed
	d.changed = map[string]bool{}
	d.mu.Unlock()
	eps := d.registry()
	if len(eps) == 0 {
		return nil
	}
	listened, err := d.cfg.Store.listened(ctx, eps)
	if err != nil {
		return err
	}
	queues := listened
	if !swept {
		queues = slices.DeleteFunc(listened, func(q string) bool { return !changed[q] })
	}
	takeover := time.Duration(0)
	if swept && time.Since(d.lookedOver) >= d.cfg.Takeover/2 {
		takeover, d.lookedOver = d.cfg.Takeover, time.Now()
		for _, q := range listened {
			if err := d.cfg.Tasks.ForgetOutboxReaders(ctx, q, forgetReaders); err != nil {
				return err
			}
		}
	}
	added := false
	for _, q := range queues {
		for {
			events, err := d.cfg.Tasks.ReadOutbox(ctx, q, d.cfg.Instance, outboxPage, takeover)
			if err != nil {
				return err
			}
			for _, ep := range eps {
				// Whether the owner may see a queue is one answer for the
				// whole page of its events.
				may := map[string]bool{}
				var dels []stored
				for _, e := range events {
					// A job that moved here is its first queue's too.
					from := q
					if !ep.Covers(q, e.Type) && e.Job != nil && e.Job.MovedFrom != "" {
						from = e.Job.MovedFrom
					}
					if !ep.Covers(from, e.Type) || e.At.Before(ep.CreatedAt) {
						continue
					}
					ok, seen := may[from]
					if !seen {
						ok = d.cfg.May(ctx, ep.Owner, from)
						may[from] = ok
					}
					if !ok {
						continue
					}
					del, err := newDelivery(e)
					if err != nil {
						return err
					}
					dels = append(dels, del)
				}
				if len(dels) == 0 {
					continue
				}
				wait, _ := Delay(d.cfg.Schedule, 0, rand.Float64)
				if err := d.cfg.Store.add(ctx, ep.ID, dels, wait); err != nil {
					return err
				}
				added = true
			}
			if err := d.cfg.Tasks.AckOutbox(ctx, q, events...); err != nil {
				return err
			}
			if len(events) < outboxPage {
				break
			}
		}
	}
	if added {
		poke(d.send)
	}
	return nil
}

// deliver starts the attempts due of every enabled endpoint, as many as
// its share of attempts under way leaves room for.
func (d *Deliverer) deliver(ctx context.Context, _ bool) error {
	for _, ep := range d.registry() {
		if !ep.Enabled {
			continue
		}
		d.mu.Lock()
		room := perEndpoint - d.inflight[ep.ID]
		d.mu.Unlock()
		if room <= 0 {
			continue
		}
		due, err := d.cfg.Store.take(ctx, ep.ID, room, time.Now().Add(cmp.Or(d.cfg.Egress.Timeout, DefaultTimeout)+leaseSlack))
		if err != nil {
			return err
		}
		if len(due) == 0 {
			continue
		}
		// The endpoint as it is now, not as last refreshed: a rotation or
		// a change of URL made on another instance holds at once.
		if ep, err = d.cfg.Store.read(ctx, ep.ID); err == ErrNotFound {
			continue // removed meanwhile, with its deliveries
		} else if err != nil {
			return err
		}
		d.mu.Lock()
		d.inflight[ep.ID] += len(due)
		d.mu.Unlock()
		for _, del := range due {
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				d.attempt(ctx, ep, del)
				d.mu.Lock()
				d.inflight[ep.ID]--
				d.mu.Unlock()
				poke(d.send)
			}()
		}
	}
	return nil
}

// attempt makes one attempt of the delivery and records how it ended.
// It ends early only if ctx ends while the outcome waits to be recorded.
func (d *Deliverer) attempt(ctx context.Context, ep record, del stored) {
	stop := ctx
	start := time.Now()
	if del.Attempts == 1 {
		d.first.Observe(start.Sub(time.UnixMilli(del.At)).Seconds())
	}
	keys, err := d.cfg.Store.signingKeys(ep, start)
	if err != nil {
		d.cfg.Log.Error("webhooks: signing", "webhook", ep.ID, "err", err)
		return
	}
	ts := start.Unix()
	h := http.Header{}
	h.Set("webhook-id", del.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", Sign(keys, del.ID, ts, []byte(del.Body)))
	h.Set("Content-Type", "application/json")
	// An attempt under way when the deliverer stops is seen through
	// (Egress's timeout bounds it) and recorded.
	ctx = context.WithoutCancel(ctx)
	ans := d.cfg.Egress.Post(ctx, ep.URL, h, []byte(del.Body))
	o := outcome{ok: ans.Err == nil && ans.Status >= 200 && ans.Status < 300, status: ans.Status, response: ans.Body}
	result := "succeeded"
	if !o.ok {
		result = "failed"
		o.err = fmt.Sprintf("answered %d", ans.Status)
		if ans.Err != nil {
			o.err = ans.Err.Error()
		}
		if wait, more := Delay(d.cfg.Schedule, del.Attempts, rand.Float64); more && ans.Status != http.StatusGone {
			o.next = time.Now().Add(max(wait, ans.RetryAfter))
		}
	}
	if ans.Status == http.StatusGone {
		result = "gone"
	}
	d.deliveries.WithLabelValues(result).Inc()
	since, err := d.settle(stop, ctx, ep.ID, del, o)
	if err != nil {
		d.troubles.Add("webhooks: recording an attempt", err, "webhook", ep.ID)
		return
	}
	reason := ""
	switch {
	case ans.Status == http.StatusGone:
		reason = DisabledGone
	case !o.ok && !since.IsZero() && time.Since(since) >= FailingLimit:
		reason = DisabledFailing
	}
	if reason != "" {
		if err := d.cfg.Store.Disable(ctx, ep.ID, reason); err != nil {
			d.troubles.Add("webhooks: disabling", err, "webhook", ep.ID)
			return
		}
		d.cfg.Log.Warn("webhooks: endpoint disabled", "webhook", ep.ID, "url", ep.URL, "reason", reason)
		d.Changed(ctx)
	}
}

// settle records how the attempt ended. While the store cannot answer
// for a moment (Redis restarting or failing over), it tries again until
// the delivery's lease ends or stop does: an attempt the endpoint answered
// meanwhile is recorded once Redis is back, rather than made again by
// whichever deliverer takes the delivery when its lease is over.
func (d *Deliverer) settle(stop, ctx context.Context, endpoint string, del stored, o outcome) (time.Time, error) {
	leased := time.UnixMilli(del.NextAt)
	wait := settleRetry
	for {
		since, _, err := d.cfg.Store.settle(ctx, endpoint, del, o)
		if err == nil || !storeerr.Transient(err) || time.Now().Add(wait).After(leased) {
			return since, err
		}
		select {
		case <-stop.Done():
			return since, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// lagCollector reports, at each scrape, what each endpoint has still to
// receive: how many deliveries, and how long ago the oldest's event
// happened; and each listened queue's outbox: the events not yet handed
// on, and those its cap dropped.
type lagCollector struct{ d *Deliverer }

var (
	pendingDesc = prometheus.NewDesc("claimdesk_webhook_pending", "Deliveries an endpoint has still to receive.", []string{"webhook"}, nil)
	lagDesc     = prometheus.NewDesc("claimdesk_webhook_lag_seconds", "How long ago the oldest event an endpoint has still to receive happened (0: none).", []string{"webhook"}, nil)
	outboxDesc  = prometheus.NewDesc("claimdesk_webhook_outbox_events", "Events in a queue's outbox, not yet handed on to the endpoints.", []string{"queue"}, nil)
	lostDesc    = prometheus.NewDesc("claimdesk_webhook_outbox_lost_total", "Events a queue's outbox dropped, full while nobody read it.", []string{"queue"}, nil)
)

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- lagDesc
	ch <- outboxDesc
	ch <- lostDesc
}

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	eps := c.d.registry()
	if len(eps) > 0 {
		queues, _ := c.d.cfg.Store.listened(ctx, eps)
		for _, q := range queues {
			st, err := c.d.cfg.Tasks.Outbox(ctx, q)
			if err != nil {
				continue
			}
			ch <- prometheus.MustNewConstMetric(outboxDesc, prometheus.GaugeValue, float64(st.Waiting), q)
			ch <- prometheus.MustNewConstMetric(lostDesc, prometheus.CounterValue, float64(st.Lost), q)
		}
	}
	for _, ep := range eps {
		n, oldest, err := c.d.cfg.Store.Pending(ctx, ep.ID)
		if err != nil {
			continue
		}
		lag := 0.0
		if !oldest.IsZero() {
			lag = time.Since(oldest).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n), ep.ID)
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, lag, ep.ID)
	}
}

// listened returns the queues some endpoint listens to: those the
// endpoints name and their breach queues (where their jobs may move, and
// end: tasks.Job.MovedFrom), and every queue if one names none.
func (s *Store) listened(ctx context.Context, eps []record) ([]string, error) {
	var out []string
	for _, ep := range eps {
		if len(ep.Queues) == 0 {
			return s.tasks.QueueNames(ctx)
		}
		out = append(out, ep.Queues...)
	}
	for _, name := range slices.Clone(out) {
		q, err := s.tasks.Queue(ctx, name)
		if err != nil && err != tasks.ErrQueueNotFound {
			return nil, err
		}
		if q.BreachQueue != "" {
			out = append(out, q.BreachQueue)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Sync turns on the outbox of every queue an endpoint listens to, and off
// that of every other queue. The desk calls it after each change of the
// registry, before answering it, so an endpoint registered receives the
// events of every change after it.
func (s *Store) Sync(ctx context.Context) error {
	eps, err := s.records(ctx)
	if err != nil {
		return err
	}
	on, err := s.listened(ctx, eps)
	if err != nil {
		return err
	}
	if len(eps) == 0 {
		on = nil
	}
	all, err := s.tasks.QueueNames(ctx)
	if err != nil {
		return err
	}
	for _, q := range all {
		if err := s.tasks.SetOutbox(ctx, q, slices.Contains(on, q)); err != nil && err != tasks.ErrQueueNotFound {
			return err
		}
	}
	return nil
}

// QueueCreated turns on the outbox of a queue just made, if an endpoint
// listens to every queue.
func (s *Store) QueueCreated(ctx context.Context, queue string) error {
	eps, err := s.records(ctx)
	if err != nil {
		return err
	}
	for _, ep := range eps {
		if len(ep.Queues) == 0 || slices.Contains(ep.Queues, queue) {
			return s.tasks.SetOutbox(ctx, queue, true)
		}
	}
	return nil
}
