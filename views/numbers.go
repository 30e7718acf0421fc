package views

import (
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/tasks"
)

// Day is a queue's last 24 hours, a quarter hour a slot, the last slot the
// quarter hour under way.
type Day struct {
	// Start is when the first slot begins; Now is when the last ends.
	Start, Now time.Time
	Series     []Series
}

// Series is one line of a queue's day: a value per slot, oldest first.
type Series struct {
	Label string
	// Total says the day in one figure: the sum of a rate, the latest of
	// a level.
	Total string
	// Peak says the highest value.
	Peak   string
	Values []int64
	// Points says each slot's value in words ("7 ready"), as the chart
	// shows it for the slot under the pointer or chosen by the keyboard.
	Points []string
}

// daySlots is how many points a day's chart has: one per quarter hour.
const daySlots = 24 * 4

// slot is how long one point of a day's chart lasts.
const slot = 15 * time.Minute

// DaySeries folds a queue's minutes of the day before now into quarter
// hours of the clock: the ready jobs as last sampled in each, the claims,
// completions and deaths within it, and the longest the oldest ready job
// had waited. The quarter hour under way ends with st, the counts the page
// shows beside the chart, so the two never disagree: its ready jobs are
// st's, and its oldest wait reaches st's.
func DaySeries(ms []tasks.Minute, st tasks.Stats, now time.Time) Day {
	var v [7][]int64
	for i := range v {
		v[i] = make([]int64, daySlots)
	}
	ready, claims, done, dead, oldest, due, late := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	start := now.Truncate(slot).Add(-(daySlots - 1) * slot)
	var sums [5]int64
	for _, m := range ms {
		i := int(m.At.Sub(start) / slot)
		if m.At.Before(start) || i >= daySlots {
			continue
		}
		ready[i] = m.Ready
		claims[i] += m.Claims
		done[i] += m.Completed
		dead[i] += m.Dead
		oldest[i] = max(oldest[i], int64(m.OldestWait/time.Second))
		due[i] += m.DueCompleted
		late[i] += m.DueCompleted - m.OnTime
		sums[0] += m.Claims
		sums[1] += m.Completed
		sums[2] += m.Dead
		sums[3] += m.DueCompleted
		sums[4] += m.OnTime
	}
	last := daySlots - 1
	ready[last] = st.Ready
	var waitNow int64
	if st.OldestWaitingSince != nil {
		waitNow = int64(max(0, now.Sub(*st.OldestWaitingSince)) / time.Second)
	}
	oldest[last] = max(oldest[last], waitNow)
	count := func(label, total, one, many string, values []int64) Series {
		s := Series{Label: label, Total: total, Peak: i64(peak(values)), Values: values, Points: make([]string, len(values))}
		for i, n := range values {
			s.Points[i] = i64(n) + " " + many
			if n == 1 {
				s.Points[i] = "1 " + one
			}
		}
		return s
	}
	wait := func(secs int64) string {
		if secs == 0 {
			return "none"
		}
		return span(time.Duration(secs) * time.Second)
	}
	waits := Series{Label: "Oldest wait", Total: wait(waitNow) + " now", Peak: wait(peak(oldest)), Values: oldest,
		Points: make([]string, len(oldest))}
	for i, secs := range oldest {
		waits.Points[i] = "nothing waiting"
		if secs > 0 {
			waits.Points[i] = "oldest waited " + wait(secs)
		}
	}
	series := []Series{
		count("Ready", i64(st.Ready)+" now", "ready", "ready", ready),
		count("Claims", i64(sums[0])+" in 24 h", "claim", "claims", claims),
		count("Completed", i64(sums[1])+" in 24 h", "completed", "completed", done),
		count("Dead", i64(sums[2])+" in 24 h", "died", "died", dead),
		waits,
	}
	// A queue whose jobs had due times: the completions after them, and
	// the share before them in the 24 hours, its attainment.
	if sums[3] > 0 {
		lates := Series{Label: "Late", Total: percent(sums[4], sums[3]) + " on time", Peak: i64(peak(late)), Values: late,
			Points: make([]string, daySlots)}
		for i := range late {
			lates.Points[i] = "none due"
			if due[i] > 0 {
				lates.Points[i] = i64(late[i]) + " late of " + i64(due[i]) + " due"
			}
		}
		series = append(series, lates)
	}
	return Day{Start: start, Now: now, Series: series}
}

// tickEvery is how far apart the day's axis names the time.
const tickEvery = 8 * time.Hour

// Ticks are the times the day's axis names, every tickEvery after its
// start; the axis ends with "now".
func (d Day) Ticks() []time.Time {
	var out []time.Time
	for t := d.Start.Add(tickEvery); t.Before(d.Start.Add(daySlots * slot)); t = t.Add(tickEvery) {
		out = append(out, t)
	}
	return out
}

// tickX is where a tick stands on a chart's x axis, in slots.
func (d Day) tickX(t time.Time) string {
	return itoa(int(t.Sub(d.Start) / slot))
}

// sparkPoints draws the values as an SVG polyline in a daySlots × 30 box,
// each value at the middle of its slot, the highest at the top (a line
// along the bottom when all are 0).
func sparkPoints(values []int64) string {
	top := max(1, peak(values))
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteByte(' ')
		}
		y := 29 - float64(v)/float64(top)*28
		b.WriteString(strconv.Itoa(i) + ".5," + strconv.FormatFloat(y, 'f', 1, 64))
	}
	return b.String()
}

// peak is the highest value of a series (0 for none).
func peak(values []int64) int64 {
	var top int64
	for _, v := range values {
		top = max(top, v)
	}
	return top
}
