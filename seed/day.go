package seed

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"claimdesk/internal/tasks"

	"github.com/redis/go-redis/v9"
)

// The past day of the demo data: jobs arrive through the 24 hours before
// now, busiest in office hours (UTC), and the demo operators claim and
// finish them, all through the engine on a clock of the simulation's own,
// so that the jobs' histories, the completed and dead lists and the
// queues' numbers over time are those a real day would leave. Every
// minute's numbers are sampled as the cron job does.

// dayTitles make up the titles of a queue's jobs of the day.
var dayTitles = map[string]func(r *rand.Rand, n int) string{
	"invoice-review": func(r *rand.Rand, n int) string {
		vendors := []string{"Nordwind GmbH", "Alpenblick Catering AG", "Cloudvault Hosting B.V.", "Helios Solar SARL", "Ferreira Transportes Lda", "Müller Druck & Medien KG"}
		return fmt.Sprintf("Check invoice INV-2026-%04d from %s (€ %d.00)", 1000+n, vendors[r.IntN(len(vendors))], 80+r.IntN(9000))
	},
	"support-escalations": func(r *rand.Rand, n int) string {
		issues := []string{"cannot export reports", "billed twice this month", "SSO login loops", "webhook deliveries delayed", "API returns 429 below the quota"}
		return fmt.Sprintf("Ticket #%d: customer %s", 48000+n, issues[r.IntN(len(issues))])
	},
	"content-moderation": func(r *rand.Rand, n int) string {
		kinds := []string{"comment", "profile photo", "review", "listing", "video"}
		return fmt.Sprintf("Reported %s #%d (spam?)", kinds[r.IntN(len(kinds))], 90000+n)
	},
	"address-verification": func(r *rand.Rand, n int) string {
		cities := []string{"Berlin", "Hamburg", "München", "Wien", "Zürich", "Lyon"}
		return fmt.Sprintf("Verify address of order ORD-2026-%06d (%s)", 300000+n, cities[r.IntN(len(cities))])
	},
}

// event is something that happens in the day at a time; in one instant,
// arrivals come first, then claims, then ends, then the minute's sample.
type event struct {
	at   time.Time
	kind int
	do   func() error
}

// pastDay works the queue through the day before now with the people who
// work it, and the supervisor who at times takes a job back. It returns
// how many jobs arrived. A queue whose jobs several people answer
// (overlap) starts today: it has no day before.
func pastDay(ctx context.Context, rdb redis.UniversalClient, q tasks.Queue, workers []string, supervisor string, now time.Time) (int, error) {
	if q.Overlap > 1 {
		return 0, nil
	}
	var clock time.Time
	ts := tasks.New(rdb, tasks.WithClock(func() time.Time { return clock }))
	seed := uint64(0)
	for _, c := range q.Name {
		seed = seed*31 + uint64(c)
	}
	r := rand.New(rand.NewPCG(seed, 2026))
	title := dayTitles[q.Name]
	lease := time.Duration(cmp.Or(q.LeaseSeconds, 300)) * time.Second
	start := now.Truncate(time.Minute).Add(-tasks.NumbersKept * time.Minute)
	end := now.Truncate(time.Minute).Add(-15 * time.Minute) // nothing still under way

	var events []event
	add := func(at time.Time, kind int, do func() error) { events = append(events, event{at, kind, do}) }
	// work has someone take the job (its id known once it arrived) at t
	// and end it: mostly completed, at times given back or taken back
	// (someone takes it again later), now and then failed or left to run
	// out of time (dead: one attempt). Every job of the day is finished by
	// end: none waits on, for a waiting job of a queue that ages would
	// outrank any job of today.
	var work func(id *string, t time.Time, again bool)
	work = func(id *string, t time.Time, again bool) {
		if t.After(end) {
			t = end
		}
		worker := workers[r.IntN(len(workers))]
		handle := min(time.Duration(60+r.IntN(540))*time.Second, lease*4/5)
		roll := r.IntN(100)
		// Given back, or taken back by the supervisor, and taken again
		// within 20 minutes: early enough that this too ends before now.
		early := !again && t.Before(end.Add(-30*time.Minute))
		giveBack := roll < 3 && early
		takenBack := roll == 5 && early && supervisor != ""
		// Left to run out of time (its one attempt spent: dead).
		ranOut := roll == 6 && early && t.Before(end.Add(-lease-2*time.Minute))
		var held *tasks.Reservation
		add(t, 1, func() (err error) {
			held, err = ts.Claim(ctx, q.Name, worker, tasks.OnlyJob(*id))
			if err == nil && held == nil {
				err = fmt.Errorf("job %s was not there to claim", *id)
			}
			return err
		})
		if ranOut {
			add(t.Add(lease+time.Minute), 2, func() (err error) {
				_, _, err = ts.ReclaimExpired(ctx, q.Name, tasks.MaxMaintainBatch)
				return err
			})
			return
		}
		add(t.Add(handle), 2, func() (err error) {
			switch {
			case giveBack:
				_, err = ts.Release(ctx, *id, held.Hold())
			case takenBack:
				_, _, err = ts.Requeue(ctx, *id, supervisor)
			case roll < 5:
				_, err = ts.Fail(ctx, *id, held.Hold(), "Not enough information to decide; sent back to the requester.")
			default:
				var result json.RawMessage
				if result, err = outcomeOf(q.Outcome, r); err == nil {
					_, err = ts.Complete(ctx, *id, held.Hold(), result)
				}
			}
			return err
		})
		if giveBack || takenBack {
			work(id, t.Add(handle+time.Duration(1+r.IntN(20))*time.Minute), true)
		}
	}
	arrived := 0
	for t := start; t.Before(now); t = t.Add(time.Minute) {
		add(t.Add(59*time.Second), 3, func() error { return ts.SampleNumbers(ctx, q.Name) })
		h := float64(t.Hour()) + float64(t.Minute())/60
		busy := math.Max(0, math.Sin((h-7)/12*math.Pi)) // 07:00 to 19:00 UTC
		if !t.Before(end) || r.Float64() >= 0.04+0.5*busy {
			continue
		}
		at := t.Add(time.Duration(r.IntN(60)) * time.Second)
		job := tasks.NewJob{Title: title(r, arrived), MaxAttempts: 1, Payload: []byte(fmt.Sprintf(`{"demo":true,"n":%d}`, arrived))}
		arrived++
		id := new(string)
		add(at, 0, func() error {
			out, err := ts.Enqueue(ctx, q.Name, "demo", []tasks.NewJob{job})
			if err == nil {
				*id = out[0].Job.ID
			}
			return err
		})
		wait := time.Duration(1+r.IntN(25)) * time.Minute
		if busy == 0 {
			wait = time.Duration(60+r.IntN(240)) * time.Minute // nobody works at night
		}
		work(id, at.Add(wait), false)
	}
	slices.SortStableFunc(events, func(a, b event) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.kind, b.kind)) })
	for _, e := range events {
		clock = e.at
		if err := e.do(); err != nil {
			return arrived, err
		}
	}
	return arrived, nil
}

// demoTexts are what the demo's people write in an outcome form's text
// fields, by field name.
var demoTexts = map[string][]string{
	"escalated_to":     {"Platform team", "Billing lead", "Data protection officer"},
	"rejection_reason": {"Duplicate of an invoice already paid.", "No purchase order matches.", "VAT id does not check out."},
}

// outcomeOf is a result that fits the queue's outcome form, as a person
// would fill it in: the first decision most of the time, the required
// fields and now and then an optional one. None for a queue without one.
func outcomeOf(o *tasks.Outcome, r *rand.Rand) (json.RawMessage, error) {
	if o.Empty() {
		return nil, nil
	}
	res := map[string]any{}
	decision := ""
	if len(o.Choices) > 0 {
		decision = o.Choices[0]
		if r.IntN(3) == 0 {
			decision = o.Choices[r.IntN(len(o.Choices))]
		}
		res["decision"] = decision
	}
	for _, f := range o.Fields {
		if !f.Required && !slices.Contains(f.RequiredFor, decision) && r.IntN(4) > 0 {
			continue
		}
		switch f.Type {
		case tasks.FieldNumber:
			res[f.Name] = float64(1000+r.IntN(200000)) / 100
		case tasks.FieldYesNo:
			res[f.Name] = r.IntN(5) > 0
		case tasks.FieldOneOf:
			res[f.Name] = f.Options[r.IntN(len(f.Options))]
		default:
			texts, ok := demoTexts[f.Name]
			if !ok {
				texts = []string{"Noted in the ticket."}
			}
			res[f.Name] = texts[r.IntN(len(texts))]
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	return b, o.Check(b)
}
