package webhooks

import (
	"fmt"
	"strings"
	"time"
)

// DefaultSchedule is the retry schedule of a delivery: 8 attempts, a few
// seconds apart at first and hours apart at the end, the last about 27.5
// hours after the first (the waits add up to 27h35m5s before Delay's
// jitter). A schedule's entry i is the wait before attempt i+1: entry 0 from the
// event, each later one from the failure of the attempt before. So
// attempt 1 goes at once, attempt 2 five seconds after attempt 1 failed,
// and attempt 8, ten hours after attempt 7, is the last.
var DefaultSchedule = []time.Duration{
	0,
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	10 * time.Hour,
}

// The bounds of a schedule ParseSchedule takes: at most maxAttempts
// entries (attempts), each at most maxWait.
const (
	maxAttempts = 20
	maxWait     = 24 * time.Hour
)

// jitter is how far Delay moves a wait, up or down, as a fraction of it:
// endpoints that failed together do not all come back at once.
const jitter = 0.1

// ParseSchedule reads a schedule written as comma-separated Go durations,
// such as "0s,5s,5m,30m,2h,5h,10h,10h": 1 to 20 of them, each up to 24h,
// and only the first 0 (a retry always waits).
func ParseSchedule(s string) ([]time.Duration, error) {
	parts := strings.Split(s, ",")
	if len(parts) > maxAttempts {
		return nil, fmt.Errorf("%d waits, want 1 to %d", len(parts), maxAttempts)
	}
	schedule := make([]time.Duration, len(parts))
	for i, part := range parts {
		part = strings.TrimSpace(part)
		d, err := time.ParseDuration(part)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%q is no duration", part)
		case d < 0 || d > maxWait:
			return nil, fmt.Errorf("%q is not from 0 to 24h", part)
		case d == 0 && i > 0:
			return nil, fmt.Errorf("wait %d is 0: only the first may be", i+1)
		}
		schedule[i] = d
	}
	return schedule, nil
}

// Delay returns how long to wait after the given attempt failed (1 is the
// first; 0, none made yet, gives the wait before the first) before the
// next, by schedule: its entry attempt, moved by up to 10% either way as
// rnd, a number in [0, 1) such as rand.Float64, says. It returns false
// when the schedule has no attempt after that one: the delivery has
// failed for good.
func Delay(schedule []time.Duration, attempt int, rnd func() float64) (time.Duration, bool) {
	if attempt < 0 || attempt >= len(schedule) {
		return 0, false
	}
	d := schedule[attempt]
	return d + time.Duration((2*rnd()-1)*jitter*float64(d)), true
}
