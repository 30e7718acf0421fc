// Package seed loads claimdesk's demo data — queues, users with their
// granted queues, producer tokens and realistic jobs — from the JSON files
// beside it. Loading twice changes nothing: queues and users are put again
// as they are, and every job carries an idempotency key.
package seed

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/skills"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/redis/go-redis/v9"
)

//go:embed *.json
var files embed.FS

// User is one entry of users.json.
type User struct {
	Name     string   `json:"name"`
	Role     string   `json:"role"`
	Queues   []string `json:"queues"`
	Skills   []string `json:"skills"`
	Password string   `json:"password"`
	Token    string   `json:"token"`
}

// Job is one entry of jobs.json.
type Job struct {
	tasks.NewJob
	Queue string `json:"queue"`
	Key   string `json:"key"`
	// ArrivedMinutesAgo, if set, enqueues the job as if that long ago, so
	// that its due time (its queue's SLA) is near or past.
	ArrivedMinutesAgo int `json:"arrived_minutes_ago"`
}

// Summary tells what Load did.
type Summary struct {
	Queues, Users, JobsCreated, JobsExisting int
	// Activity is set when the demo colleague's work was added too, and
	// DayJobs are the jobs of the day before it made.
	Activity bool
	DayJobs  int
	// Logins are the people's demo logins, to print for whoever runs it.
	Logins []User
}

// Users returns the demo users.
func Users() ([]User, error) {
	var us []User
	return us, read("users.json", &us)
}

func read(name string, v any) error {
	b, err := files.ReadFile(name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("seed/%s: %w", name, err)
	}
	return nil
}

// Load puts the demo data into the store.
func Load(ctx context.Context, rdb redis.UniversalClient, ts *tasks.Store, us *users.Store) (Summary, error) {
	var sum Summary
	var queues []tasks.Queue
	if err := read("queues.json", &queues); err != nil {
		return sum, err
	}
	for _, q := range queues {
		if _, err := ts.PutQueue(ctx, q); err != nil {
			return sum, fmt.Errorf("queue %s: %w", q.Name, err)
		}
		sum.Queues++
	}
	people, err := Users()
	if err != nil {
		return sum, err
	}
	for _, u := range people {
		have, err := skills.FromList(u.Skills)
		if err != nil {
			return sum, fmt.Errorf("user %s: %w", u.Name, err)
		}
		if err := us.Put(ctx, users.User{Name: u.Name, Role: users.Role(u.Role), Queues: u.Queues, Skills: have}, u.Password); err != nil {
			return sum, fmt.Errorf("user %s: %w", u.Name, err)
		}
		if u.Token != "" {
			if err := us.PutToken(ctx, u.Name, u.Token); err != nil {
				return sum, fmt.Errorf("user %s: %w", u.Name, err)
			}
		}
		if u.Password != "" {
			sum.Logins = append(sum.Logins, u)
		}
		sum.Users++
	}
	// A fresh store gets the day before too: jobs that came, were worked
	// and finished, and each queue's numbers of it.
	fresh := true
	for _, q := range queues {
		st, err := ts.Stats(ctx, q.Name)
		if err != nil {
			return sum, err
		}
		if st.Ready+st.Scheduled+st.Reserved+st.Completed+st.Dead+st.Canceled > 0 {
			fresh = false
		}
	}
	if fresh {
		now := time.Now()
		supervisor := ""
		for _, u := range people {
			if u.Role == string(users.Supervisor) {
				supervisor = u.Name
				break
			}
		}
		for _, q := range queues {
			var workers []string
			for _, u := range people {
				if slices.Contains(u.Queues, q.Name) && u.Role == string(users.Operator) {
					workers = append(workers, u.Name)
				}
			}
			n, err := pastDay(ctx, rdb, q, workers, supervisor, now)
			if err != nil {
				return sum, fmt.Errorf("queue %s, the day before: %w", q.Name, err)
			}
			sum.DayJobs += n
		}
	}
	var jobs []Job
	if err := read("jobs.json", &jobs); err != nil {
		return sum, err
	}
	now := time.Now()
	for _, j := range jobs {
		j.IdempotencyKey = j.Key
		store := ts
		if j.ArrivedMinutesAgo > 0 {
			arrived := now.Add(-time.Duration(j.ArrivedMinutesAgo) * time.Minute)
			store = tasks.New(rdb, tasks.WithClock(func() time.Time { return arrived }))
		}
		out, err := store.Enqueue(ctx, j.Queue, "seed", []tasks.NewJob{j.NewJob})
		if err != nil {
			return sum, fmt.Errorf("job %s: %w", j.Key, err)
		}
		if out[0].Created {
			sum.JobsCreated++
		} else {
			sum.JobsExisting++
		}
	}
	// The jobs that arrived long ago are at risk of missing their due
	// time, or missed it, from the start (as the cron job would say within
	// a tick).
	for _, q := range queues {
		for more := true; more; {
			if _, more, err = ts.WatchDue(ctx, q.Name, 100); err != nil {
				return sum, fmt.Errorf("queue %s, due times: %w", q.Name, err)
			}
		}
	}
	// A fresh store gets a morning's work too, once: the pages show
	// something real the first time.
	if fresh {
		if err := activity(ctx, ts); err != nil {
			return sum, fmt.Errorf("demo activity: %w", err)
		}
		sum.Activity = true
	}
	return sum, nil
}

// demoWorker is the demo colleague whose work the demo data shows.
const demoWorker = "dana"

// activity has dana work the demo queues through the engine, as a person
// would: completed invoices (history, recent work, results), a moderation
// job failed until dead (by dana, then bob, then carol), a photo labelled
// by three (who disagree) and another by one, a reservation held
// (extended for hours, so it outlasts a demo) and a capped batch of
// address checks in progress.
func activity(ctx context.Context, ts *tasks.Store) error {
	claim := func(queue string) (*tasks.Reservation, error) {
		r, err := ts.Claim(ctx, queue, demoWorker)
		if err == nil && r == nil {
			err = fmt.Errorf("nothing to claim in %s", queue)
		}
		return r, err
	}
	hold := func(queue string) error {
		r, err := claim(queue)
		if err == nil {
			_, err = ts.Extend(ctx, r.Job.ID, r.Hold(), 24*60*60) // to the queue's max hold
		}
		return err
	}
	verdicts := []string{
		`{"verdict":"Approved","amount_to_pay":4812,"notes":"PO and delivery note match; booked."}`,
		`{"verdict":"Approved","notes":"VAT id checked against VIES."}`,
		`{"verdict":"Rejected","rejection_reason":"Duplicate of an invoice paid in October."}`,
	}
	for _, v := range verdicts {
		r, err := claim("invoice-review")
		if err == nil {
			_, err = ts.Complete(ctx, r.Job.ID, r.Hold(), json.RawMessage(v))
		}
		if err != nil {
			return err
		}
	}
	// A failed job is not offered to whoever reported it: each try is
	// another person's.
	var failing []tasks.ClaimOption // the same job each time
	for _, try := range []struct{ who, reason string }{
		{demoWorker, "Video does not load in the review tool."},
		{"bob", "Still does not load; asked the uploader for another file."},
		{"carol", "No usable file after three tries."},
	} {
		reason := try.reason
		r, err := ts.Claim(ctx, "content-moderation", try.who, failing...)
		if err == nil && r == nil {
			err = errors.New("nothing to claim in content-moderation")
		}
		if err == nil {
			failing = []tasks.ClaimOption{tasks.OnlyJob(r.Job.ID)}
			_, err = ts.Fail(ctx, r.Job.ID, r.Hold(), reason)
		}
		if err != nil {
			return err
		}
	}
	// A photo labelled by three people, who split on two of its fields,
	// and the next with the first of its three answers.
	var photo []tasks.ClaimOption // the same job each time
	for i, label := range []struct{ who, result string }{
		{demoWorker, `{"category":"Bags","logo_visible":true,"items":1}`},
		{"bob", `{"category":"Bags","logo_visible":false,"items":1}`},
		{"carol", `{"category":"Shoes","logo_visible":true,"items":2}`},
		{demoWorker, `{"category":"Shoes","logo_visible":true,"items":2}`}, // the next photo
	} {
		if i == 3 {
			photo = nil
		}
		r, err := ts.Claim(ctx, "image-labels", label.who, photo...)
		if err == nil && r == nil {
			err = errors.New("nothing to claim in image-labels")
		}
		if err == nil {
			photo = []tasks.ClaimOption{tasks.OnlyJob(r.Job.ID)}
			_, err = ts.Complete(ctx, r.Job.ID, r.Hold(), json.RawMessage(label.result))
		}
		if err != nil {
			return err
		}
	}
	if err := hold("support-escalations"); err != nil {
		return err
	}
	two, ninety := 2, 90
	var checks []tasks.NewJob
	for _, street := range []string{"Lindenstraße 4, 10969 Berlin", "Kaiserstraße 12, 60311 Frankfurt", "Hohe Straße 80, 50667 Köln", "Königstraße 27, 70173 Stuttgart"} {
		checks = append(checks, tasks.NewJob{Title: "Verify address: " + street, Payload: json.RawMessage(`{"address":"` + street + `"}`)})
	}
	if _, _, err := ts.CreateBatch(ctx, "address-verification", "seed", tasks.NewBatch{
		Title: "Address checks for delivery wave 47", Priority: &ninety, MaxConcurrent: &two, Jobs: checks,
	}); err != nil {
		return err
	}
	r, err := claim("address-verification")
	if err == nil {
		_, err = ts.Complete(ctx, r.Job.ID, r.Hold(), json.RawMessage(`{"verdict":"valid"}`))
	}
	if err != nil {
		return err
	}
	return hold("address-verification")
}

// Reset deletes every claimdesk key (those keys.Pattern matches) from the
// store, on each master of a cluster.
func Reset(ctx context.Context, rdb redis.UniversalClient) error {
	return keys.Scan(ctx, rdb, keys.Pattern, func(key string) error { return rdb.Unlink(ctx, key).Err() })
}
