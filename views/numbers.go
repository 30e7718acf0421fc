package views

import (
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/tasks"
)

// Series is one line of a queue's day: a value per slot, oldest first.
type Series struct {
	Label string
	// Total says the day in one figure: the sum of a rate, the latest of
	// a level.
	Total string
	// Peak says the highest value.
	Peak   string
	Values []int64
}

// daySlots is how many points a day's chart has: one per quarter hour.
const daySlots = 24 * 4

// DaySeries folds a queue's minutes of the day before now into quarter
// hours: the ready jobs as last sampled in each, the claims, completions
// and deaths within it, and the longest the oldest ready job had waited.
func DaySeries(ms []tasks.Minute, now time.Time) []Series {
	var v [5][]int64
	for i := range v {
		v[i] = make([]int64, daySlots)
	}
	ready, claims, done, dead, oldest := v[0], v[1], v[2], v[3], v[4]
	start := now.Add(-24 * time.Hour)
	var sums [3]int64
	var latest, latestWait int64
	for _, m := range ms {
		slot := int(m.At.Sub(start) / (15 * time.Minute))
		if slot < 0 || slot >= daySlots {
			continue
		}
		ready[slot] = m.Ready
		latest = m.Ready
		claims[slot] += m.Claims
		done[slot] += m.Completed
		dead[slot] += m.Dead
		latestWait = int64(m.OldestWait / time.Second)
		oldest[slot] = max(oldest[slot], latestWait)
		sums[0] += m.Claims
		sums[1] += m.Completed
		sums[2] += m.Dead
	}
	count := func(label, total string, values []int64) Series {
		return Series{Label: label, Total: total, Peak: strconv.FormatInt(peak(values), 10), Values: values}
	}
	wait := func(secs int64) string {
		if secs == 0 {
			return "none"
		}
		return span(time.Duration(secs) * time.Second)
	}
	return []Series{
		count("Ready", strconv.FormatInt(latest, 10)+" now", ready),
		count("Claims", strconv.FormatInt(sums[0], 10)+" in 24 h", claims),
		count("Completed", strconv.FormatInt(sums[1], 10)+" in 24 h", done),
		count("Dead", strconv.FormatInt(sums[2], 10)+" in 24 h", dead),
		{Label: "Oldest wait", Total: wait(latestWait) + " now", Peak: wait(peak(oldest)), Values: oldest},
	}
}

// sparkPoints draws the values as an SVG polyline in a daySlots × 30 box,
// the highest value at the top (a line along the bottom when all are 0).
func sparkPoints(values []int64) string {
	var top int64 = 1
	for _, v := range values {
		top = max(top, v)
	}
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteByte(' ')
		}
		y := 29 - float64(v)/float64(top)*28
		b.WriteString(strconv.Itoa(i) + "," + strconv.FormatFloat(y, 'f', 1, 64))
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
