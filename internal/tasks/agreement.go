package tasks

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxOverlap is the most people a queue may have answer each job
// (Queue.Overlap).
const MaxOverlap = 9

// Answer is one person's answer to a job of a queue with overlap: who gave
// it, when, and the result they gave.
type Answer struct {
	By     string          `json:"by"`
	At     time.Time       `json:"at"`
	Result json.RawMessage `json:"result"`
}

// Agreed is how far a job's answers agree on one field: the value they
// agree on (null when they agree on none: text that is not unanimous) and
// the share of the answers that gave it, from 0 to 1.
type Agreed struct {
	Value json.RawMessage `json:"value"`
	Share float64         `json:"share"`
}

// storedAnswer is an answer as lua/lib.lua keeps it: its time in ms.
type storedAnswer struct {
	By     string          `json:"by"`
	At     int64           `json:"at"`
	Result json.RawMessage `json:"result"`
}

// decodeAnswers reads a job's answers as stored (lua/lib.lua, Overlap).
func decodeAnswers(raw string) ([]Answer, error) {
	var stored []storedAnswer
	if err := json.Unmarshal([]byte(raw), &stored); err != nil {
		return nil, fmt.Errorf("answers: %w", err)
	}
	out := make([]Answer, len(stored))
	for i, a := range stored {
		out[i] = Answer{By: a.By, At: msTime(a.At), Result: a.Result}
	}
	return out, nil
}

// decodeAgreement reads a job's agreement as stored ("": none).
func decodeAgreement(raw string) (map[string]Agreed, error) {
	if raw == "" {
		return nil, nil
	}
	var out map[string]Agreed
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("agreement: %w", err)
	}
	return out, nil
}

// Agree says what the answers agree on, per field of the form: for a
// decision, a yes/no or a one-of field, the value most answers gave (on a
// tie, the one given first); for a number, the median (of an even count,
// the lower of the two middle values); for text, the text if every answer
// gave the same, else none. Share is how many answers gave the agreed
// value, of all the answers. A queue without a form agrees each top-level
// value of the results the same way as a choice. The result is the agreed
// values, by field (those agreed on none left out); notes are never
// agreed.
func (o *Outcome) Agree(answers []Answer) (result json.RawMessage, agreement map[string]Agreed, err error) {
	values := make([]map[string]json.RawMessage, len(answers))
	for i, a := range answers {
		if len(a.Result) > 0 && !bytes.Equal(a.Result, null) {
			if err := json.Unmarshal(a.Result, &values[i]); err != nil {
				return nil, nil, fmt.Errorf("answer %d: %w", i+1, err)
			}
		}
	}
	type field struct{ name, kind string }
	var fields []field
	if o.Empty() {
		seen := map[string]bool{}
		for _, v := range values {
			for name := range v {
				if !seen[name] && name != "notes" {
					seen[name] = true
					fields = append(fields, field{name, FieldOneOf})
				}
			}
		}
		slices.SortFunc(fields, func(a, b field) int { return cmp.Compare(a.name, b.name) })
	} else {
		if len(o.Choices) > 0 {
			fields = append(fields, field{"decision", FieldOneOf})
		}
		for _, f := range o.Fields {
			fields = append(fields, field{f.Name, f.Type})
		}
	}
	agreement = make(map[string]Agreed, len(fields))
	agreed := make(map[string]json.RawMessage, len(fields))
	for _, f := range fields {
		var given []json.RawMessage
		for _, v := range values {
			if x, ok := v[f.name]; ok && !bytes.Equal(x, null) {
				given = append(given, x)
			}
		}
		a := agree(f.kind, given, len(answers))
		agreement[f.name] = a
		if !bytes.Equal(a.Value, null) {
			agreed[f.name] = a.Value
		}
	}
	result, err = json.Marshal(agreed)
	return result, agreement, err
}

// agree agrees the values given for one field of the kind, out of n
// answers (Outcome.Agree).
func agree(kind string, given []json.RawMessage, n int) Agreed {
	if len(given) == 0 || n == 0 {
		return Agreed{Value: null}
	}
	share := func(v json.RawMessage) float64 {
		c := 0
		for _, g := range given {
			if same(g, v) {
				c++
			}
		}
		return float64(c) / float64(n)
	}
	switch kind {
	case FieldNumber:
		sorted := slices.Clone(given)
		slices.SortStableFunc(sorted, func(a, b json.RawMessage) int {
			x, _ := strconv.ParseFloat(string(a), 64)
			y, _ := strconv.ParseFloat(string(b), 64)
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		})
		median := sorted[(len(sorted)-1)/2]
		return Agreed{Value: median, Share: share(median)}
	case FieldText:
		s := share(given[0])
		if s < 1 {
			best := 0.0
			for _, g := range given {
				best = max(best, share(g))
			}
			return Agreed{Value: null, Share: best}
		}
		return Agreed{Value: given[0], Share: s}
	}
	best, top := given[0], share(given[0])
	for _, g := range given[1:] {
		if s := share(g); s > top {
			best, top = g, s
		}
	}
	return Agreed{Value: best, Share: top}
}

// null is JSON's null: a value agreed on none, or a field not given.
var null = json.RawMessage("null")

// same reports whether two JSON values are equal as values: numbers by
// value, the rest as compacted text.
func same(a, b json.RawMessage) bool {
	x, errX := strconv.ParseFloat(string(a), 64)
	y, errY := strconv.ParseFloat(string(b), 64)
	if errX == nil && errY == nil {
		return x == y
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// agreeing is what the completion that gives a job its last answer hands
// the script (lua/lib.lua, Overlap), each "" until the answers are agreed:
// how many answers came before the last, the agreement's JSON, the result
// agreed, the lowest share of a field some answer gave, and each answerer,
// "=1" when their answer agreed with every value agreed, else "=0", one
// per line.
type agreeing struct{ count, agreement, result, lowest, judged string }

// agreeing agrees a job's answers, as stored (Agree).
func (o *Outcome) agreeing(raw string) (agreeing, error) {
	answers, err := decodeAnswers(raw)
	if err != nil {
		return agreeing{}, err
	}
	result, by, err := o.Agree(answers)
	if err != nil {
		return agreeing{}, err
	}
	text, err := json.Marshal(by)
	if err != nil {
		return agreeing{}, err
	}
	lowest := 1.0
	for _, a := range by {
		if a.Share > 0 {
			lowest = min(lowest, a.Share)
		}
	}
	var judged strings.Builder
	for _, a := range answers {
		var values map[string]json.RawMessage
		_ = json.Unmarshal(a.Result, &values) // agreed above: a result is an object or null
		agrees := "1"
		for name, v := range by {
			if !bytes.Equal(v.Value, null) && !same(values[name], v.Value) {
				agrees = "0"
			}
		}
		fmt.Fprintf(&judged, "%s=%s\n", a.By, agrees)
	}
	return agreeing{count: strconv.Itoa(len(answers) - 1), agreement: string(text), result: string(result),
		lowest: strconv.FormatFloat(lowest, 'f', -1, 64), judged: judged.String()}, nil
}
