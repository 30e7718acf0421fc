package tasks

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"
)

// Work by person: every reservation that ends counts once, in its queue,
// in its holder's tally of the UTC day it ends (lua/lib.lua, tally): the
// same script call that ends it counts it, so a tally can neither miss an
// ending nor count one twice.

const (
	// tallyDays is how many days of tallies a queue keeps per person: the
	// TallyWindow, and a day more, so a reader of the window never meets a
	// field that today's first ending is starting over.
	tallyDays = TallyWindow + 1
	// handlingBase and handlingPerDoubling make the buckets of handling
	// time: a time t falls in bucket floor(handlingPerDoubling *
	// log2(t / handlingBase)), 0 at least. Each bucket is 2^(1/8) wide, so
	// its middle is within 4.5% of every time in it.
	handlingBase        = 100 * time.Millisecond
	handlingPerDoubling = 8
	// tallyOnTime and tallyLate are the buckets, below every handling
	// bucket, that count the completions of jobs with a due time: those
	// completed before it, and the others.
	tallyOnTime, tallyLate = -2, -1
)

// TallyWindow is how many days, today included, Tallies reads.
const TallyWindow = 7

// Tally is what one person's reservations came to: how each ended, and
// how long the completed ones were held.
type Tally struct {
	Completed int64
	// GivenBack counts the reservations released or skipped.
	GivenBack int64
	// Failed counts those ended with "can't be done".
	Failed int64
	// Expired counts those that ran out of time.
	Expired int64
	// TakenBack counts those a supervisor ended: forced released,
	// requeued or canceled.
	TakenBack int64
	// Due counts the completions of jobs with a due time, and OnTime
	// those of them completed before it.
	Due, OnTime int64
	// Approved and SentBack count the person's completions that reviewers
	// approved and sent back (lua/lib.lua, Review); Judged their answers
	// to jobs with overlap that were agreed with the others', and Agreed
	// those of them that agreed with the majority on every field.
	Approved, SentBack, Judged, Agreed int64
	// handling counts the completions by bucket of handling time, from
	// claim to completion.
	handling map[int]int64
}

// ApprovalRate is the share of the person's reviewed completions that
// were approved, and false when none was reviewed.
func (t Tally) ApprovalRate() (float64, bool) {
	if t.Approved+t.SentBack == 0 {
		return 0, false
	}
	return float64(t.Approved) / float64(t.Approved+t.SentBack), true
}

// AgreementRate is the share of the person's judged answers that agreed
// with the majority, and false when none was judged.
func (t Tally) AgreementRate() (float64, bool) {
	if t.Judged == 0 {
		return 0, false
	}
	return float64(t.Agreed) / float64(t.Judged), true
}

// Attainment is the share of the completions of jobs with a due time
// that came before it, and false when there were none.
func (t Tally) Attainment() (float64, bool) {
	if t.Due == 0 {
		return 0, false
	}
	return float64(t.OnTime) / float64(t.Due), true
}

// Ended counts the reservations that ended, however.
func (t Tally) Ended() int64 {
	return t.Completed + t.GivenBack + t.Failed + t.Expired + t.TakenBack
}

// MedianHandling is the median time from claim to completion of the
// completed reservations, to within 4.5% (the middle of the bucket that
// holds it), or 0 for none.
func (t Tally) MedianHandling() time.Duration {
	if t.Completed == 0 {
		return 0
	}
	buckets := make([]int, 0, len(t.handling))
	for b := range t.handling {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	half, seen := (t.Completed+1)/2, int64(0)
	for _, b := range buckets {
		if seen += t.handling[b]; seen >= half {
			return time.Duration(float64(handlingBase) * math.Exp2((float64(b)+0.5)/handlingPerDoubling)).Round(time.Millisecond)
		}
	}
	return 0
}

// add counts o into t.
func (t *Tally) add(o Tally) {
	t.Completed += o.Completed
	t.GivenBack += o.GivenBack
	t.Failed += o.Failed
	t.Expired += o.Expired
	t.TakenBack += o.TakenBack
	t.Due += o.Due
	t.OnTime += o.OnTime
	t.Approved += o.Approved
	t.SentBack += o.SentBack
	t.Judged += o.Judged
	t.Agreed += o.Agreed
	if len(o.handling) > 0 && t.handling == nil {
		t.handling = map[int]int64{}
	}
	for b, n := range o.handling {
		t.handling[b] += n
	}
}

// decodeTally reads a tally as lib.lua stores it: the day, the given
// back, failed, expired and taken back counts, then pairs of bucket and
// completions: tallyOnTime and tallyLate, then the handling buckets.
func decodeTally(raw string) (day int64, t Tally, err error) {
	r := &msgpackReader{b: raw}
	v, err := r.five()
	if err != nil {
		return 0, Tally{}, err
	}
	t = Tally{GivenBack: v[1], Failed: v[2], Expired: v[3], TakenBack: v[4]}
	for r.i < len(r.b) {
		b, err := r.integer()
		if err != nil {
			return 0, Tally{}, err
		}
		n, err := r.integer()
		if err != nil {
			return 0, Tally{}, err
		}
		switch b {
		case tallyOnTime:
			t.OnTime += n
			t.Due += n
			continue
		case tallyLate:
			t.Due += n
			continue
		}
		if t.handling == nil {
			t.handling = map[int]int64{}
		}
		t.handling[int(b)] += n
		t.Completed += n
	}
	return v[0], t, nil
}

// decodeReviews reads a person's review tally as lib.lua stores it
// (review_tally): the day, then the approved, sent back, judged and
// agreed counts.
func decodeReviews(raw string) (day int64, t Tally, err error) {
	v, err := (&msgpackReader{b: raw}).five()
	if err != nil {
		return 0, Tally{}, err
	}
	return v[0], Tally{Approved: v[1], SentBack: v[2], Judged: v[3], Agreed: v[4]}, nil
}

// five reads the five integers a tally record starts with (lib.lua's
// tally and review_tally): the day, then four counts.
func (r *msgpackReader) five() (v [5]int64, err error) {
	for i := range v {
		if v[i], err = r.integer(); err != nil {
			return v, err
		}
	}
	return v, nil
}

// PersonTally is one person's tallies across the queues read: of today
// (the UTC day under way) and of the TallyWindow days ending today.
type PersonTally struct {
	Today, Window Tally
}

// Tallies returns the tallies of everyone who ended a reservation of the
// given queues in the last TallyWindow days (UTC days, today included),
// by person, read in one round trip. A queue that no longer exists counts
// nothing.
func (s *Store) Tallies(ctx context.Context, queues []string) (map[string]*PersonTally, error) {
	out := map[string]*PersonTally{}
	if len(queues) == 0 {
		return out, nil
	}
	values, errs, err := s.readEach(ctx, tallyScript, queues, s.nowArg(), TallyWindow)
	if err != nil {
		return nil, err
	}
	for i, r := range values {
		if errs[i] != nil {
			return nil, errs[i]
		}
		today, pairs := r.int("today"), r.list("tallies")
		if err := r.done(); err != nil {
			return nil, err
		}
		for pairs.more() {
			person, raw := pairs.str("person"), pairs.str("tally")
			if pairs.err != nil {
				return nil, pairs.err
			}
			decode := decodeTally
			if name, reviews := strings.CutSuffix(person, "\nr"); reviews {
				person, decode = name, decodeReviews
			}
			day, t, err := decode(raw)
			if err != nil {
				return nil, err
			}
			p := out[person]
			if p == nil {
				p = &PersonTally{}
				out[person] = p
			}
			p.Window.add(t)
			if day == today {
				p.Today.add(t)
			}
		}
	}
	return out, nil
}
