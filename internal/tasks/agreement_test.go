package tasks

import (
	"encoding/json"
	"testing"
)

// answersOf makes answers of the results, by a, b, c, ….
func answersOf(results ...string) []Answer {
	out := make([]Answer, len(results))
	for i, r := range results {
		out[i] = Answer{By: string(rune('a' + i)), Result: json.RawMessage(r)}
	}
	return out
}

// Answers agree field by field: choices, yes/no and one-of by the value
// most gave (the first given on a tie), numbers by their median, text
// only when unanimous; a field some left out counts against agreement.
func TestAgree(t *testing.T) {
	form := &Outcome{Choices: []string{"approve", "reject", "escalate"}, Fields: []OutcomeField{
		{Name: "amount", Type: FieldNumber}, {Name: "ok", Type: FieldYesNo},
		{Name: "kind", Type: FieldOneOf, Options: []string{"a", "b"}}, {Name: "why", Type: FieldText},
	}}
	for _, c := range []struct {
		name    string
		form    *Outcome
		answers []string
		result  string
		agreed  map[string]string
	}{
		{"unanimous", form, []string{
			`{"decision":"approve","amount":3,"ok":true,"kind":"a","why":"x","notes":"n1"}`,
			`{"decision":"approve","amount":3.0,"ok":true,"kind":"a","why":"x","notes":"n2"}`,
		}, `{"amount":3,"decision":"approve","kind":"a","ok":true,"why":"x"}`, map[string]string{
			"decision": `"approve" 1`, "amount": `3 1`, "ok": `true 1`, "kind": `"a" 1`, "why": `"x" 1`,
		}},
		{"majority, median, no unanimity", form, []string{
			`{"decision":"reject","amount":1,"ok":false,"why":"x"}`,
			`{"decision":"approve","amount":7,"ok":true,"why":"y"}`,
			`{"decision":"approve","amount":4,"ok":true,"why":"y"}`,
		}, `{"amount":4,"decision":"approve","ok":true}`, map[string]string{
			"decision": `"approve" 0.67`, "amount": `4 0.33`, "ok": `true 0.67`, "kind": `null 0`, "why": `null 0.67`,
		}},
		{"a tie goes to the first given; an even count to the lower median", form, []string{
			`{"decision":"escalate","amount":10}`, `{"decision":"reject","amount":2}`,
		}, `{"amount":2,"decision":"escalate"}`, map[string]string{
			"decision": `"escalate" 0.5`, "amount": `2 0.5`,
		}},
		{"no form: each value as a choice", nil, []string{
			`{"label":"cat","box":[1,2]}`, `{"label":"cat","box":[1, 2]}`, `{"label":"dog"}`,
		}, `{"box":[1,2],"label":"cat"}`, map[string]string{
			"label": `"cat" 0.67`, "box": `[1,2] 0.67`,
		}},
		{"answers without a result", form, []string{`null`, `{"decision":"approve"}`},
			`{"decision":"approve"}`, map[string]string{"decision": `"approve" 0.5`, "why": `null 0`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			result, agreement, err := c.form.Agree(answersOf(c.answers...))
			if err != nil {
				t.Fatal(err)
			}
			if string(result) != c.result {
				t.Fatalf("result %s, want %s", result, c.result)
			}
			for name, want := range c.agreed {
				a, ok := agreement[name]
				if got := string(a.Value) + " " + formatShare(a.Share); !ok || got != want {
					t.Errorf("%s: %s, want %s", name, got, want)
				}
			}
			if _, ok := agreement["notes"]; ok {
				t.Error("notes were agreed")
			}
		})
	}
}
