package tasks

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"claimdesk/internal/skills"

	"github.com/redis/go-redis/v9"
)

// Routing: jobs may ask for skills, name one person, or prefer people for
// a while (NewJob, lua/lib.lua). The engine keeps a queue's routed jobs in
// lines of their own; the skills lines a claimer may take from are
// computed here, from the queue's lines as last read, and handed to the
// claim, which refuses them when the queue's lines have changed since
// (errRoutesChanged): they are read again and the claim made again.

// errRoutesChanged means a claim was handed the skills lines of an older
// count of the queue's lines (lua/lib.lua, routes_stale).
var errRoutesChanged = errors.New("the queue's skills lines changed meanwhile")

// routeTries bounds how often one claim reads the lines again: each time
// a new line came meanwhile.
const routeTries = 5

// routesSeen are a queue's skills lines as last read: the count they were
// read at, and the lines ("+<skills>") by the first of their skills' names,
// each with its skills.
type routesSeen struct {
	version string
	byFirst map[string][]skillsLine
	// covered memoizes, by a claimer's canonical skills, the lines they
	// may take from, one per line of text.
	covered sync.Map
}

// skillsLine is one skills line and the skills it asks for.
type skillsLine struct {
	line string
	want skills.Set
}

// givenLines returns what a claim of the queue by someone with these
// skills is handed (lua/claim.lua, ARGV[9] and ARGV[10]): the count of
// lines known, and the lines their skills cover.
func (s *Store) givenLines(queue string, have skills.Set) (version, lines string) {
	v, ok := s.routes.Load(queue)
	if !ok {
		return "", ""
	}
	seen := v.(*routesSeen)
	if len(have) == 0 {
		return seen.version, ""
	}
	key := have.String()
	if got, ok := seen.covered.Load(key); ok {
		return seen.version, got.(string)
	}
	// A line whose first skill the claimer lacks is not theirs: only
	// those of their own skills are looked at.
	var b strings.Builder
	for name := range have {
		for _, l := range seen.byFirst[name] {
			if have.Covers(l.want) {
				b.WriteString(l.line)
				b.WriteByte('\n')
			}
		}
	}
	seen.covered.Store(key, b.String())
	return seen.version, b.String()
}

// readRoutes reads the queue's skills lines again, in one round trip.
func (s *Store) readRoutes(ctx context.Context, queue string) error {
	k := keysFor(queue)
	var version *redis.StringCmd
	var lines *redis.StringSliceCmd
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		version = p.HGet(ctx, k.Conf(), "routes_v")
		lines = p.HKeys(ctx, k.Routes())
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return redisErr(err)
	}
	seen := &routesSeen{version: version.Val(), byFirst: map[string][]skillsLine{}}
	if seen.version == "" {
		seen.version = "0"
	}
	for _, line := range lines.Val() {
		// Written by the scripts from skills.Set.String: readable.
		want, err := skills.Parse(strings.TrimPrefix(line, "+"))
		if err != nil {
			return err
		}
		first := want.Names()[0]
		seen.byFirst[first] = append(seen.byFirst[first], skillsLine{line, want})
	}
	s.routes.Store(queue, seen)
	return nil
}

// routed runs a script that claims, or looks at what a claim would take,
// for someone with skills have: call is handed the skills lines
// (givenLines) and makes the call; when they were not the queue's, they
// are read again and the call made again.
func (s *Store) routed(ctx context.Context, queue string, have skills.Set, call func(version, lines string) (*reply, error)) (*reply, error) {
	for range routeTries {
		r, err := call(s.givenLines(queue, have))
		if !errors.Is(err, errRoutesChanged) {
			return r, err
		}
		if err := s.readRoutes(ctx, queue); err != nil {
			return nil, err
		}
	}
	return nil, errRoutesChanged
}

// ForPerson is what one person may claim in a queue.
type ForPerson struct {
	// Routed says that the queue ever had a job routed to people or
	// skills: what a person may claim there may be less than its ready
	// jobs.
	Routed bool
	// Claimable is how many of its jobs the person may claim now.
	Claimable int64
	// Mine are the first of the jobs routed to them by name (assigned to
	// them, or preferring them), best first, without payloads.
	Mine []*Job
}

// MaxMine bounds the jobs of a person's own that Mine lists per queue.
const MaxMine = 50

// Line is one line of a queue's routed jobs that holds a job: the jobs
// waiting for one person, or for people with some skills.
type Line struct {
	Queue string
	// Person is whom its jobs wait for by name (assigned to them, or
	// preferring them), or Skills what they ask for.
	Person string
	Skills skills.Set
	// Waiting is how many jobs wait in it, and First the first of them.
	Waiting int64
	First   string
}

// MaxLines bounds the lines Lines returns per queue.
const MaxLines = 1000

// Lines returns the lines of the queues' routed jobs that hold a job (at
// most MaxLines per queue), in one round trip (a queue that does not exist
// has none).
func (s *Store) Lines(ctx context.Context, queues []string) ([]Line, error) {
	queues = slices.DeleteFunc(slices.Clone(queues), func(q string) bool { return !validQueueName(q) })
	values, errs, err := s.readEach(ctx, linesScript, queues, MaxLines)
	if err != nil {
		return nil, err
	}
	var out []Line
	for i, r := range values {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for r.more() {
			l := Line{Queue: queues[i]}
			name := r.str("line")
			l.Waiting, l.First = r.int("waiting"), globalID(r.str("first job"), queues[i])
			if person, ok := strings.CutPrefix(name, "@"); ok {
				l.Person = person
			} else if l.Skills, err = skills.Parse(strings.TrimPrefix(name, "+")); err != nil {
				return nil, err
			}
			out = append(out, l)
		}
		if err := r.done(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
