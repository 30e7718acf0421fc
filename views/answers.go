package views

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"claimdesk/internal/tasks"
)

// answerGrid is a job's answers side by side (a job of a queue with
// overlap): a column per answer, by whom and when, a row per field, and
// what the answers agree on once the last is in.
type answerGrid struct {
	By   []string
	At   []time.Time
	Rows []answerRow
	// Agreed is set once the job has its agreement.
	Agreed bool
	// Of says how many answers it has of how many it needs: "2 of 3".
	Of string
}

// answerRow is one field of a job's answers: each answer's value (Kind ""
// where an answer gave none), the value agreed on (nil for none) and the
// share of the answers that gave it.
type answerRow struct {
	Label  string
	Key    string
	Values []Field
	Agreed *Field
	Share  string
	// Split marks a field the answers do not all agree on.
	Split bool
}

// answersOf lays out the job's answers: fields in the order the answers
// first give them, notes last.
func answersOf(j *tasks.Job) answerGrid {
	var g answerGrid
	byKey := map[string]*answerRow{}
	var keys []string
	for i, a := range j.Answers {
		g.By, g.At = append(g.By, a.By), append(g.At, a.At)
		for _, f := range ParsePayload(a.Result) {
			if f.Key == "" || f.Kind == "null" {
				continue
			}
			r, ok := byKey[f.Key]
			if !ok {
				r = &answerRow{Key: f.Key, Label: f.Label(), Values: make([]Field, len(j.Answers))}
				byKey[f.Key] = r
				keys = append(keys, f.Key)
			}
			r.Values[i] = f
		}
	}
	for key := range j.Agreement {
		if _, ok := byKey[key]; !ok {
			byKey[key] = &answerRow{Key: key, Label: Field{Key: key}.Label(), Values: make([]Field, len(j.Answers))}
			keys = append(keys, key)
		}
	}
	if i := slices.Index(keys, "notes"); i >= 0 {
		keys = append(slices.Delete(keys, i, i+1), "notes")
	}
	g.Agreed = j.Agreement != nil
	g.Of = fmt.Sprintf("%d of %d", len(j.Answers), max(j.Overlap, len(j.Answers)))
	for _, key := range keys {
		r := byKey[key]
		if a, ok := j.Agreement[key]; ok {
			r.Share = fmt.Sprintf("%d%%", int(math.Round(a.Share*100)))
			r.Split = a.Share < 1
			if string(a.Value) != "null" {
				wrapped, _ := json.Marshal(map[string]json.RawMessage{key: a.Value})
				if fs := ParsePayload(wrapped); len(fs) == 1 {
					r.Agreed = &fs[0]
				}
			}
		}
		g.Rows = append(g.Rows, *r)
	}
	return g
}
