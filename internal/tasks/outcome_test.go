package tasks

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"claimdesk/internal/numfmt"
)

// supportForm is the demo's support-escalations outcome form.
const supportForm = `{
  "choices": ["resolved", "refund", "escalate"],
  "fields": [
    {"name": "category", "type": "one_of", "options": ["Billing", "Delivery", "Other"], "required": true},
    {"name": "refund_amount", "label": "Refund amount", "type": "number", "required_for": ["refund"]},
    {"name": "customer_told", "type": "yes_no", "required": true},
    {"name": "escalated_to", "type": "text", "required_for": ["escalate"]}
  ]
}`

func mustOutcome(t *testing.T, raw string) *Outcome {
	t.Helper()
	o, err := ParseOutcome(raw)
	if err != nil {
		t.Fatalf("ParseOutcome: %v", err)
	}
	return o
}

func TestParseOutcome(t *testing.T) {
	o := mustOutcome(t, supportForm)
	if len(o.Choices) != 3 || len(o.Fields) != 4 || o.Fields[1].RequiredFor[0] != "refund" {
		t.Fatalf("parsed %+v", o)
	}
	// It goes back to the same JSON, and empty forms are no form.
	if again := mustOutcome(t, o.String()); again.String() != o.String() {
		t.Errorf("round trip: %s, then %s", o, again)
	}
	for _, none := range []string{"", "  ", "null", "{}", `{"choices": [], "fields": []}`} {
		if o := mustOutcome(t, none); o != nil || o.String() != "" || !o.Empty() {
			t.Errorf("%q is a form: %+v", none, o)
		}
	}
	bad := map[string]string{
		`{"choices": ["only"]}`:                                                                     "outcome.choices",
		`{"choices": ["a", "a"]}`:                                                                   "outcome.choices[1]",
		`{"choices": ["Approve", "b"]}`:                                                             "outcome.choices[0]",
		`{"fields": [{"name": "x", "type": "date"}]}`:                                               "outcome.fields[0].type",
		`{"fields": [{"name": "notes", "type": "text"}]}`:                                           "outcome.fields[0].name",
		`{"fields": [{"name": "decision", "type": "text"}]}`:                                        "outcome.fields[0].name",
		`{"fields": [{"name": "9lives", "type": "text"}]}`:                                          "outcome.fields[0].name",
		`{"fields": [{"name": "a", "type": "one_of"}]}`:                                             "outcome.fields[0].options",
		`{"fields": [{"name": "a", "type": "text", "options": ["x", "y"]}]}`:                        "outcome.fields[0].options",
		`{"fields": [{"name": "a", "type": "one_of", "options": ["x", "x"]}]}`:                      "outcome.fields[0].options[1]",
		`{"fields": [{"name": "a", "type": "text"}, {"name": "a", "type": "text"}]}`:                "outcome.fields[1].name",
		`{"choices": ["a", "b"], "fields": [{"name": "r", "type": "text", "required_for": ["c"]}]}`: "outcome.fields[0].required_for[0]",
		`{"fields": [{"name": "r", "type": "text", "required": true, "required_for": ["a"]}]}`:      "outcome.fields[0].required_for",
		`{"fields": [{"name": "r", "type": "text", "colour": "red"}]}`:                              "outcome",
		`{"choices": ["a", "b"], "choices": ["c", "d"]}`:                                            "outcome",
		`[1, 2]`: "outcome",
		`{"fields": [{"name": "a", "type": "one_of", "options": [" x", "y"]}]}`: "outcome.fields[0].options[0]",
		`{"Choices": ["a", "b"]}`:                                                    "outcome",
		`{"fields": [{"name": "a", "type": "text", "min": 1}]}`:                      "outcome.fields[0].min",
		`{"fields": [{"name": "a", "type": "number", "min": 5, "max": 1}]}`:          "outcome.fields[0].max",
		`{"fields": [{"name": "a", "type": "number", "prefill": "lines[x].sku"}]}`:   "outcome.fields[0].prefill",
		`{"fields": [{"name": "a", "type": "number", "prefill": "invoice..total"}]}`: "outcome.fields[0].prefill",
	}
	for raw, field := range bad {
		_, err := ParseOutcome(raw)
		var v *ValidationError
		if !errors.As(err, &v) || !errors.Is(err, ErrInvalid) || v.Field != field && !strings.HasPrefix(v.Field, field) {
			t.Errorf("ParseOutcome(%s) = %v, want a problem with %s", raw, err, field)
		}
	}
	long := `{"fields": [{"name": "a", "type": "text", "label": "` + strings.Repeat("é", 81) + `"}]}`
	if _, err := ParseOutcome(long); err == nil {
		t.Error("an 81-character label was taken")
	}
}

func TestOutcomeCheck(t *testing.T) {
	o := mustOutcome(t, supportForm)
	good := []string{
		`{"decision": "resolved", "category": "Billing", "customer_told": true}`,
		`{"decision": "refund", "category": "Billing", "customer_told": false, "refund_amount": 1188, "notes": "Double charge."}`,
		`{"decision": "escalate", "category": "Other", "customer_told": true, "escalated_to": "Platform team", "refund_amount": null}`,
	}
	for _, r := range good {
		if err := o.Check(json.RawMessage(r)); err != nil {
			t.Errorf("Check(%s) = %v", r, err)
		}
	}
	bad := map[string]map[string]string{
		``: {"decision": "is required: one of resolved, refund, escalate", "category": "is required", "customer_told": "is required"},
		`{"decision": "refund", "category": "Billing", "customer_told": true}`: {"refund_amount": "is required"},
		`{"decision": "maybe", "category": "Billing", "customer_told": true}`:  {"decision": "must be one of resolved, refund, escalate"},
		`{"decision": "resolved", "category": "billing", "customer_told": "yes"}`: {
			"category": "must be one of Billing, Delivery, Other", "customer_told": "must be true or false"},
		`{"decision": "refund", "category": "Billing", "customer_told": true, "refund_amount": "12"}`: {"refund_amount": "must be a number"},
		`{"decision": "escalate", "category": "Other", "customer_told": true, "escalated_to": "  "}`:  {"escalated_to": "must not be blank"},
		`{"decision": "resolved", "category": "Other", "customer_told": true, "approved": "yes", "notes": 3}`: {
			"approved": "is not a field of the outcome form", "notes": "must be text"},
	}
	for r, want := range bad {
		err := o.Check(json.RawMessage(r))
		var oe *OutcomeError
		if !errors.As(err, &oe) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Check(%s) = %v, want an OutcomeError", r, err)
			continue
		}
		if len(oe.Fields) != len(want) {
			t.Errorf("Check(%s) = %v, want %v", r, oe.Fields, want)
		}
		for k, v := range want {
			if oe.Fields[k] != v {
				t.Errorf("Check(%s)[%s] = %q, want %q", r, k, oe.Fields[k], v)
			}
		}
	}
	if err := o.Check(json.RawMessage(`[1]`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("an array result: %v", err)
	}
	// A queue without a form takes any result.
	var none *Outcome
	if err := none.Check(json.RawMessage(`{"anything": [1, 2]}`)); err != nil {
		t.Errorf("no form: %v", err)
	}
}

func TestOutcomeFromForm(t *testing.T) {
	o := mustOutcome(t, supportForm)
	form := url.Values{"decision": {"refund"}, "category": {"Billing"}, "customer_told": {"no"},
		"refund_amount": {" 1,188.50 "}, "escalated_to": {""}, "notes": {"  Refunded.  "}}
	en, de := numfmt.Locale{Tag: "en", Known: true}, numfmt.Locale{Tag: "de", Comma: true, Known: true}
	got, err := o.FromForm(form.Get, en)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	if m["decision"] != "refund" || m["refund_amount"] != 1188.5 || m["customer_told"] != false ||
		m["notes"] != "Refunded." || len(m) != 5 {
		t.Errorf("result %s", got)
	}
	// Numbers as the viewer's locale writes them; both ways where only one
	// reading is possible; what reads two ways, refused as ambiguous.
	for _, tc := range []struct {
		loc   numfmt.Locale
		typed string
		want  any
	}{
		{en, "1,250", 1250.0}, {de, "1,250", 1.25}, {en, "1,188.00", 1188.0}, {de, "1.188,00", 1188.0},
		{en, "1.188,00", 1188.0}, {de, "1,188.00", 1188.0}, {en, "-3", -3.0}, {en, "12,50", 12.5},
		{numfmt.Locale{}, "1,188", ProblemAmbiguous}, {en, "1,2,3", ProblemNumber}, {en, "1e400", ProblemNumber},
		{en, "NaN", ProblemNumber}, {en, "twelve", ProblemNumber},
	} {
		form.Set("refund_amount", tc.typed)
		got, err := o.FromForm(form.Get, tc.loc)
		if kind, ok := tc.want.(ProblemKind); ok {
			var oe *OutcomeError
			if !errors.As(err, &oe) || oe.Problems["refund_amount"].Kind != kind {
				t.Errorf("%q in %q: %s, %v; want a problem %q", tc.typed, tc.loc.Tag, got, err, kind)
			}
			continue
		}
		var m map[string]any
		if err != nil || json.Unmarshal(got, &m) != nil || m["refund_amount"] != tc.want {
			t.Errorf("%q in %q read as %v (%v), want %v", tc.typed, tc.loc.Tag, m["refund_amount"], err, tc.want)
		}
	}
	// Every problem at once, in the form's order, the unreadable first.
	_, err = o.FromForm(url.Values{"decision": {"refund"}, "refund_amount": {"twelve"}, "customer_told": {"maybe"}}.Get, en)
	var oe *OutcomeError
	if !errors.As(err, &oe) {
		t.Fatalf("FromForm of a bad form: %v", err)
	}
	want := []string{"category", "refund_amount", "customer_told"}
	if strings.Join(oe.order, ",") != strings.Join(want, ",") || oe.Fields["refund_amount"] != "must be a number" ||
		oe.Fields["customer_told"] != "must be true or false" || oe.Fields["category"] != "is required" {
		t.Errorf("problems %v in order %v, want order %v", oe.Fields, oe.order, want)
	}
	if !strings.Contains(oe.Error(), "category is required; refund_amount must be a number") {
		t.Errorf("message %q", oe.Error())
	}
}

func TestQueueOutcomeStored(t *testing.T) {
	onEachBackend(t, func(e *env) {
		s, ctx, name := e.store, e.ctx, e.queue+"-formed"
		o := mustOutcome(t, supportForm)
		q, err := s.CreateQueue(ctx, Queue{Name: name, Outcome: o})
		if err != nil || q.Outcome.String() != o.String() {
			t.Fatalf("CreateQueue: %+v, %v", q.Outcome, err)
		}
		got, err := s.Queue(ctx, name)
		if err != nil || got.Outcome.String() != o.String() {
			t.Fatalf("Queue: %+v, %v", got.Outcome, err)
		}
		// A patch of other settings keeps the form; an empty form removes it.
		lease := 60
		if q, _, err = s.PatchQueue(ctx, name, QueuePatch{LeaseSeconds: &lease}); err != nil || q.Outcome.String() != o.String() {
			t.Fatalf("patch of the lease: %+v, %v", q.Outcome, err)
		}
		if _, _, err = s.PatchQueue(ctx, name, QueuePatch{Outcome: &Outcome{Choices: []string{"one"}}}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("patch with a bad form: %v", err)
		}
		if q, _, err = s.PatchQueue(ctx, name, QueuePatch{Outcome: &Outcome{}}); err != nil || q.Outcome != nil {
			t.Fatalf("patch removing the form: %+v, %v", q.Outcome, err)
		}
		all, err := s.Queues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, qs := range all {
			if qs.Queue.Name == name && (qs.Queue.Outcome != nil || qs.Queue.LeaseSeconds != 60) {
				t.Fatalf("Queues: %+v", qs.Queue)
			}
		}
		// PutQueue replaces the settings, the form with them.
		if q, err = s.PutQueue(ctx, Queue{Name: name, Outcome: o}); err != nil || q.Outcome.String() != o.String() {
			t.Fatalf("PutQueue: %+v, %v", q.Outcome, err)
		}
		if q, err = s.PutQueue(ctx, Queue{Name: name}); err != nil || q.Outcome != nil {
			t.Fatalf("PutQueue without a form: %+v, %v", q.Outcome, err)
		}
	})
}

// completeBy calls Complete, or CompleteNext when next, and returns the
// completed job.
func (e *env) completeBy(next bool, id string, h Hold, result string) (*Job, error) {
	if next {
		j, _, _, err := e.store.CompleteNext(e.ctx, id, h, json.RawMessage(result))
		return j, err
	}
	return e.store.Complete(e.ctx, id, h, json.RawMessage(result))
}

// The engine refuses a completion whose result does not fit the queue's
// outcome form, with the form's problems, whoever calls it; it changes
// nothing. Anyone but the holder is told what the hold is to them, never
// the form's problems.
func TestCompleteChecksOutcome(t *testing.T) {
	const fits = `{"decision":"refund","category":"Billing","refund_amount":12.5,"customer_told":true}`
	for _, next := range []bool{false, true} {
		name := "Complete"
		if next {
			name = "CompleteNext"
		}
		t.Run(name, func(t *testing.T) {
			onEachBackend(t, func(e *env) {
				if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{Outcome: mustOutcome(t, supportForm)}); err != nil {
					t.Fatal(err)
				}
				j := e.add("refund", 50)
				r := e.claim("ann")

				for _, result := range []string{``, `{"notes":"done"}`, `{"decision":"refund","category":"Billing","customer_told":true}`} {
					_, err := e.completeBy(next, j.ID, r.Hold(), result)
					var oe *OutcomeError
					if !errors.As(err, &oe) || !errors.Is(err, ErrInvalid) {
						t.Fatalf("completing with %q: %v, want an *OutcomeError", result, err)
					}
					want, _ := mustOutcome(t, supportForm).Check(json.RawMessage(result)).(*OutcomeError)
					if oe.Error() != want.Error() {
						t.Errorf("completing with %q: %q, want the form's own %q", result, oe.Error(), want.Error())
					}
				}
				if got := e.get(j.ID); got.State != StateReserved || got.Result != nil {
					t.Fatalf("after the refusals the job is %s with result %s, want reserved without", got.State, got.Result)
				}
				if ts := e.changes(); len(ts) != 2 { // its enqueue and claim
					t.Fatalf("the refusals changed something: %+v", ts)
				}

				// Not the holder: the hold decides, the form is not told.
				_, err := e.completeBy(next, j.ID, Hold{Holder: "bob", Token: r.Token}, `{}`)
				wantErr(t, "the holder's token from someone else", err, ErrForbidden)
				_, err = e.completeBy(next, j.ID, Hold{Holder: "ann", Token: "not-the-token"}, `{}`)
				wantErr(t, "another token", err, ErrReservationLost)

				done, err := e.completeBy(next, j.ID, r.Hold(), fits)
				if err != nil || done.State != StateCompleted || string(done.Result) != fits {
					t.Fatalf("completing with a result that fits: %+v, %v", done, err)
				}
				// Once completed, a retry is answered as the completion was,
				// the result sent first kept; others are told the hold is gone.
				again, err := e.completeBy(next, j.ID, r.Hold(), `{}`)
				if err != nil || string(again.Result) != fits {
					t.Fatalf("retry: %+v, %v", again, err)
				}
				_, err = e.completeBy(next, j.ID, Hold{Holder: "bob", Token: "x"}, `{}`)
				wantErr(t, "someone else after the completion", err, ErrReservationLost)
			})
		})
	}
}

// A completion is judged by the outcome form of the instant it takes
// effect: a form changed after this Store last read it (by another
// instance, say) is the one that counts, in both directions.
func TestCompleteOutcomeChangedMeanwhile(t *testing.T) {
	onEachBackend(t, func(e *env) {
		other := New(e.rdb, WithClock(e.clock.Now)) // another instance
		choose := func(choices ...string) {
			t.Helper()
			if _, _, err := other.PatchQueue(e.ctx, e.queue, QueuePatch{Outcome: &Outcome{Choices: choices}}); err != nil {
				t.Fatal(err)
			}
		}
		choose("yes", "no")
		first := e.add("first", 50)
		r := e.claim("ann")
		if _, err := e.store.Complete(e.ctx, first.ID, r.Hold(), json.RawMessage(`{"decision":"yes"}`)); err != nil {
			t.Fatalf("completing by the first form: %v", err)
		}

		// The form changes: what fitted the old one is refused...
		choose("approve", "reject")
		j := e.add("second", 50)
		r = e.claim("ann")
		_, err := e.store.Complete(e.ctx, j.ID, r.Hold(), json.RawMessage(`{"decision":"yes"}`))
		var oe *OutcomeError
		if !errors.As(err, &oe) || !strings.Contains(oe.Fields["decision"], "approve, reject") {
			t.Fatalf("completing by the old form after a change: %v, want refused by the new form", err)
		}
		// ...and what fits the new one is taken, though the old refused it.
		choose("one", "two")
		done, err := e.store.Complete(e.ctx, j.ID, r.Hold(), json.RawMessage(`{"decision":"one"}`))
		if err != nil || done.State != StateCompleted {
			t.Fatalf("completing by the new form: %+v, %v", done, err)
		}

		// The form removed: any result is taken. The queue deleted and
		// made again with another form: that form counts.
		if _, _, err := other.PatchQueue(e.ctx, e.queue, QueuePatch{Outcome: &Outcome{}}); err != nil {
			t.Fatal(err)
		}
		j = e.add("third", 50)
		r = e.claim("ann")
		if _, err := e.store.Complete(e.ctx, j.ID, r.Hold(), json.RawMessage(`{"anything":1}`)); err != nil {
			t.Fatalf("completing without a form: %v", err)
		}
		if err := other.DeleteQueue(e.ctx, e.queue); err != nil {
			t.Fatal(err)
		}
		if _, err := other.CreateQueue(e.ctx, Queue{Name: e.queue, Outcome: &Outcome{Choices: []string{"a", "b"}}}); err != nil {
			t.Fatal(err)
		}
		j = e.add("in the new queue", 50)
		r = e.claim("ann")
		_, err = e.store.Complete(e.ctx, j.ID, r.Hold(), json.RawMessage(`{"anything":1}`))
		if !errors.As(err, &oe) {
			t.Fatalf("completing in a queue made again with a form: %v, want refused by it", err)
		}
	})
}

// Every problem of a form at once, each at its path, one a path.
func TestOutcomeProblems(t *testing.T) {
	o := Outcome{Choices: []string{"ok", "ok", "Bad"}, Fields: []OutcomeField{
		{Name: "9", Type: "date"},
		{Name: "amount", Type: FieldNumber, Min: ptr(5.0), Max: ptr(1.0), Prefill: "a[-1]"},
		{Name: "amount", Type: FieldOneOf, Options: []string{"x"}},
	}}
	var got []string
	for _, p := range o.Problems() {
		got = append(got, p.Field)
	}
	want := "outcome.choices[1] outcome.choices[2] outcome.fields[0].name outcome.fields[0].type outcome.fields[1].max " +
		"outcome.fields[1].prefill outcome.fields[2].name outcome.fields[2].options"
	if strings.Join(got, " ") != want {
		t.Errorf("problems at\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if err := o.Validate(); err == nil || !strings.HasPrefix(err.Error(), "outcome.choices[1]: repeats") {
		t.Errorf("Validate = %v, want the first problem", err)
	}
}

func ptr[T any](v T) *T { return &v }

// A payload path is keys joined by dots, list positions in brackets.
func TestPayloadPath(t *testing.T) {
	for path, want := range map[string]bool{
		"invoice.total": true, "lines[0].sku": true, "m[1][2]": true, "a-b_c.D9": true, "x": true,
		"": false, ".a": false, "a.": false, "a..b": false, "a[": false, "a[]": false, "a[01]": false, "[0]": false,
		"a[0]b": false, "a b": false, "a[-1]": false, strings.Repeat("a", 201): false,
	} {
		if PayloadPath(path) != want {
			t.Errorf("PayloadPath(%q) = %v", path, !want)
		}
	}
}

// A field starts with the payload's value at its path when its type can
// take it.
func TestPrefillValue(t *testing.T) {
	payload := json.RawMessage(`{"invoice": {"gross": 1188.0, "ref": "INV-1", "paid": false, "due": "12.5"},
		"lines": [{"sku": "A-1", "qty": 3}], "kind": "Billing"}`)
	for _, tc := range []struct {
		f    OutcomeField
		want any
	}{
		{OutcomeField{Type: FieldNumber, Prefill: "invoice.gross"}, json.Number("1188.0")},
		{OutcomeField{Type: FieldNumber, Prefill: "invoice.due"}, json.Number("12.5")},
		{OutcomeField{Type: FieldText, Prefill: "lines[0].sku"}, "A-1"},
		{OutcomeField{Type: FieldText, Prefill: "lines[0].qty"}, "3"},
		{OutcomeField{Type: FieldYesNo, Prefill: "invoice.paid"}, false},
		{OutcomeField{Type: FieldOneOf, Options: []string{"Billing", "Other"}, Prefill: "kind"}, "Billing"},
		{OutcomeField{Type: FieldOneOf, Options: []string{"A", "B"}, Prefill: "kind"}, nil},
		{OutcomeField{Type: FieldNumber, Prefill: "invoice.ref"}, nil},
		{OutcomeField{Type: FieldNumber, Prefill: "lines[1].qty"}, nil},
		{OutcomeField{Type: FieldNumber, Prefill: "invoice"}, nil},
		{OutcomeField{Type: FieldNumber, Prefill: "nothing.here"}, nil},
		{OutcomeField{Type: FieldNumber}, nil},
	} {
		v, ok := tc.f.PrefillValue(payload)
		if ok != (tc.want != nil) || ok && v != tc.want {
			t.Errorf("%s (%s): %#v, %v; want %#v", tc.f.Prefill, tc.f.Type, v, ok, tc.want)
		}
	}
}

// A number's bounds are checked with its type.
func TestOutcomeBounds(t *testing.T) {
	o := mustOutcome(t, `{"fields": [{"name": "amount", "type": "number", "min": 0, "max": 5000}]}`)
	for result, want := range map[string]string{
		`{"amount": 0}`: "", `{"amount": 5000}`: "", `{"amount": -1}`: "must be between 0 and 5000", `{"amount": 5000.5}`: "must be between 0 and 5000",
	} {
		err := o.Check(json.RawMessage(result))
		var oe *OutcomeError
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", result, err)
		case want != "" && (!errors.As(err, &oe) || oe.Fields["amount"] != want || oe.Problems["amount"].Kind != ProblemRange):
			t.Errorf("%s: %v, want %q", result, err, want)
		}
	}
}
