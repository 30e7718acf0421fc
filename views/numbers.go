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
	Total  string
	Values []int64
}

// daySlots is how many points a day's chart has: one per quarter hour.
const daySlots = 24 * 4

// DaySeries folds a queue's minutes of the day before now into quarter
// hours: the ready jobs as last sampled in each, and the claims,
// completions and deaths within it.
func DaySeries(ms []tasks.Minute, now time.Time) []Series {
	ready, claims, done, dead := make([]int64, daySlots), make([]int64, daySlots), make([]int64, daySlots), make([]int64, daySlots)
	start := now.Add(-24 * time.Hour)
	var sums [3]int64
	var latest int64
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
		sums[0] += m.Claims
		sums[1] += m.Completed
		sums[2] += m.Dead
	}
	return []Series{
		{Label: "Ready", Total: strconv.FormatInt(latest, 10) + " now", Values: ready},
		{Label: "Claims", Total: strconv.FormatInt(sums[0], 10) + " in 24 h", Values: claims},
		{Label: "Completed", Total: strconv.FormatInt(sums[1], 10) + " in 24 h", Values: done},
		{Label: "Dead", Total: strconv.FormatInt(sums[2], 10) + " in 24 h", Values: dead},
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

// peak is the highest value of a series.
func peak(values []int64) int64 {
	var top int64
	for _, v := range values {
		top = max(top, v)
	}
	return top
}
