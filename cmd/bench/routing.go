package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"claimdesk/internal/skills"
	"claimdesk/internal/tasks"

	"github.com/redis/go-redis/v9"
)

// The routing bench's team and its skills: routingPeople operators, each
// with 2 to 5 of routingSkills skills at levels 1 to 5.
const routingPeople, routingSkills = 1000, 20

// routingTeam makes the bench's people: their names and skills, the same
// for every run.
func routingTeam() ([]string, []skills.Set) {
	rnd := rand.New(rand.NewPCG(33, 1))
	names, have := make([]string, routingPeople), make([]skills.Set, routingPeople)
	for i := range names {
		names[i] = "person" + strconv.Itoa(i)
		have[i] = skills.Set{}
		for range 2 + rnd.IntN(4) {
			have[i]["skill"+strconv.Itoa(rnd.IntN(routingSkills))] = 1 + rnd.IntN(skills.MaxLevel)
		}
	}
	return names, have
}

// routedJob is job i of the routing bench's mix: two in five open to
// anyone; one in four asking for one skill, one in ten for one at level 2
// or 3, one in ten for two skills; one in ten assigned to a person; one in
// twenty preferring three people for an hour.
func routedJob(rnd *rand.Rand, names []string, i int) tasks.NewJob {
	j := tasks.NewJob{Title: "job " + strconv.Itoa(i)}
	skill := func() string { return "skill" + strconv.Itoa(rnd.IntN(routingSkills)) }
	switch n := rnd.IntN(20); {
	case n < 8:
	case n < 13:
		j.Skills = []string{skill()}
	case n < 15:
		j.Skills = []string{skill() + ":" + strconv.Itoa(2+rnd.IntN(2))}
	case n < 17:
		a, b := skill(), skill()
		for b == a {
			b = skill()
		}
		j.Skills = []string{a, b}
	case n < 19:
		j.Assignee = names[rnd.IntN(len(names))]
	default:
		j.Preferred = []string{names[rnd.IntN(len(names))], names[rnd.IntN(len(names))], names[rnd.IntN(len(names))]}
		if j.Preferred[1] == j.Preferred[0] || j.Preferred[2] == j.Preferred[0] || j.Preferred[2] == j.Preferred[1] {
			j.Preferred = j.Preferred[:1]
		}
		j.FallbackAfterSeconds = 3600
	}
	return j
}

// measureRouting fills a queue with n waiting jobs of mixed requirements
// (routedJob) for a team of routingPeople with routingSkills skills, and
// times claims by its people, each with their skills, against claims by
// rank in a queue without routing at as many ready jobs (the median, rank;
// 0 when not timed). It reports the memory per routed job too.
func measureRouting(ctx context.Context, r *result, rdb *redis.Client, store *tasks.Store, n int, rank float64) error {
	const q = "routed"
	if _, err := store.PutQueue(ctx, tasks.Queue{Name: q, LeaseSeconds: 60, MaxAttempts: 1000}); err != nil {
		return err
	}
	names, have := routingTeam()
	before, err := usedMemory(ctx, rdb)
	if err != nil {
		return err
	}
	rnd := rand.New(rand.NewPCG(33, 2))
	for i := 0; i < n; i += tasks.MaxBatch {
		jobs := make([]tasks.NewJob, min(tasks.MaxBatch, n-i))
		for k := range jobs {
			jobs[k] = routedJob(rnd, names, i+k)
		}
		if _, err := store.Enqueue(ctx, q, "bench", jobs); err != nil {
			return err
		}
	}
	after, err := usedMemory(ctx, rdb)
	if err != nil {
		return err
	}
	r.fig(fmt.Sprintf("Redis memory per waiting job of the routing mix (%d jobs)", n), float64(after-before)/float64(n)-float64(len("{}")), "bytes")
	claims := newRecorder(fmt.Sprintf("claim with routing: %d people, %d skills, %d waiting", routingPeople, routingSkills, n))
	found := 0
	for i := range min(1000, n) {
		who := (i * 7919) % routingPeople
		if err := claims.time(func() error {
			res, err := store.Claim(ctx, q, names[who], tasks.WithSkills(have[who]))
			if res != nil {
				found++
			}
			return err
		}); err != nil {
			return err
		}
	}
	sum := claims.summary()
	r.Ops = append(r.Ops, sum)
	r.check("claims with routing find jobs", found >= min(1000, n)*9/10, "%d of %d claims found a job", found, min(1000, n))
	if found == 0 {
		return errors.New("no claim with routing found a job")
	}
	if rank > 0 {
		r.atMost(fmt.Sprintf("median claim with routing ÷ without, at %d waiting", n), float64(sum.P50)/rank, 1.5, "×")
	}
	return rdb.FlushAll(ctx).Err()
}
