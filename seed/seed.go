// Package seed loads claimdesk's demo data — queues, users with their
// granted queues, producer tokens and realistic jobs — from the JSON files
// beside it. Loading twice changes nothing: queues and users are put again
// as they are, and every job carries an idempotency key.
package seed

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"

	"claimdesk/internal/keys"
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
	Password string   `json:"password"`
	Token    string   `json:"token"`
}

// Job is one entry of jobs.json.
type Job struct {
	tasks.NewJob
	Queue string `json:"queue"`
	Key   string `json:"key"`
}

// Summary tells what Load did.
type Summary struct {
	Queues, Users, JobsCreated, JobsExisting int
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
func Load(ctx context.Context, ts *tasks.Store, us *users.Store) (Summary, error) {
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
		if err := us.Put(ctx, users.User{Name: u.Name, Role: users.Role(u.Role), Queues: u.Queues}, u.Password); err != nil {
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
	var jobs []Job
	if err := read("jobs.json", &jobs); err != nil {
		return sum, err
	}
	for _, j := range jobs {
		j.IdempotencyKey = j.Key
		out, err := ts.Enqueue(ctx, j.Queue, "seed", []tasks.NewJob{j.NewJob})
		if err != nil {
			return sum, fmt.Errorf("job %s: %w", j.Key, err)
		}
		if out[0].Created {
			sum.JobsCreated++
		} else {
			sum.JobsExisting++
		}
	}
	return sum, nil
}

// Reset deletes every claimdesk key (those keys.Pattern matches) from the
// store, on each master of a cluster.
func Reset(ctx context.Context, rdb redis.UniversalClient) error {
	return keys.Scan(ctx, rdb, keys.Pattern, func(key string) error { return rdb.Unlink(ctx, key).Err() })
}
