package views

import (
	"encoding/json"
	"strings"
	"testing"

	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
)

func TestAttemptsLabel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		state    tasks.State
		attempts int
		max      int
		want     string
	}{
		{"reserved first", tasks.StateReserved, 0, 3, "attempt 1 of 3"},
		{"reserved last", tasks.StateReserved, 2, 3, "attempt 3 of 3"},
		{"reserved never past the last", tasks.StateReserved, 3, 3, "attempt 3 of 3"},
		{"completed", tasks.StateCompleted, 1, 3, "attempt 2 of 3"},
		{"ready untried", tasks.StateReady, 0, 3, "0 of 3 attempts used"},
		{"ready after a failure", tasks.StateReady, 1, 3, "1 of 3 attempts used"},
		{"dead", tasks.StateDead, 3, 3, "all 3 attempts used"},
		{"dead of one", tasks.StateDead, 1, 1, "its only attempt used"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := &tasks.Job{State: tc.state, Attempts: tc.attempts, MaxAttempts: tc.max}
			if got := attemptsLabel(j); got != tc.want {
				t.Errorf("attemptsLabel = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEntryWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    tasks.Entry
		want string
	}{
		{"enqueued", tasks.Entry{Action: tasks.ActionEnqueued, Actor: "pat", To: tasks.StateReady}, "enqueued by pat"},
		{"claimed", tasks.Entry{Action: tasks.ActionClaimed, Actor: "ann", Attempt: 1}, "claimed by ann (attempt 1)"},
		{"failed", tasks.Entry{Action: tasks.ActionFailed, Actor: "ann", Reason: "no PDF", To: tasks.StateReady}, "failed by ann: no PDF"},
		{"failed for good", tasks.Entry{Action: tasks.ActionFailed, Actor: "ann", Reason: "no PDF", To: tasks.StateDead},
			"failed by ann: no PDF · no attempts left: dead"},
		{"taken back", tasks.Entry{Action: tasks.ActionForceReleased, Actor: "sam", Holder: "ann"}, "taken back by sam from ann"},
		{"taken back, saying why", tasks.Entry{Action: tasks.ActionForceReleased, Actor: "sam", Holder: "ann", Reason: "customer called"},
			"taken back by sam from ann: customer called"},
		{"requeued, saying why", tasks.Entry{Action: tasks.ActionRequeued, Actor: "sam", Reason: "fixed upstream", To: tasks.StateReady},
			"requeued by sam: fixed upstream"},
		{"expired", tasks.Entry{Action: tasks.ActionExpired, Actor: tasks.System, Holder: "ann"}, "expired (held by ann)"},
		{"canceled while held", tasks.Entry{Action: tasks.ActionCanceled, Actor: "sam", Holder: "ann"}, "canceled by sam (held by ann)"},
		{"canceled, saying why", tasks.Entry{Action: tasks.ActionCanceled, Actor: "sam", Reason: "duplicate", To: tasks.StateCanceled},
			"canceled by sam: duplicate"},
		{"completed", tasks.Entry{Action: tasks.ActionCompleted, Actor: "ann"}, "completed by ann"},
		{"given back in a canceled batch", tasks.Entry{Action: tasks.ActionReleased, Actor: "ann", To: tasks.StateCanceled},
			"given back by ann · its batch is canceled: canceled"},
		{"assigned", tasks.Entry{Action: tasks.ActionAssigned, Actor: "sam", Assignee: "bo", To: tasks.StateReady}, "assigned to bo by sam"},
		{"transferred, saying why", tasks.Entry{Action: tasks.ActionTransferred, Actor: "sam", Assignee: "bo", Holder: "ann", Reason: "knows them", To: tasks.StateReady},
			"transferred to bo by sam from ann: knows them"},
		{"fell back", tasks.Entry{Action: tasks.ActionFellBack, Actor: tasks.System, To: tasks.StateReady},
			"open to anyone with its skills: its preferred people's time ran out"},
		{"answered", tasks.Entry{Action: tasks.ActionAnswered, Actor: "ann", From: tasks.StateReserved, To: tasks.StateReady},
			"answered by ann; waits for the next person's answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := entryWords(tc.e); got != tc.want {
				t.Errorf("entryWords = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEndedBecause(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ended tasks.Entry
		want  string
	}{
		{"canceled", tasks.Entry{Action: tasks.ActionCanceled, Actor: "sam", Holder: "ann", From: tasks.StateReserved, To: tasks.StateCanceled},
			"sam canceled this job."},
		{"canceled, saying why", tasks.Entry{Action: tasks.ActionCanceled, Actor: "sam", Holder: "ann", From: tasks.StateReserved, To: tasks.StateCanceled, Reason: "sent twice"},
			"sam canceled this job: sent twice"},
		{"taken back", tasks.Entry{Action: tasks.ActionForceReleased, Actor: "sam", Holder: "ann", From: tasks.StateReserved, To: tasks.StateReady},
			"sam took this job back."},
		{"taken back, saying why", tasks.Entry{Action: tasks.ActionForceReleased, Actor: "sam", Holder: "ann", From: tasks.StateReserved, To: tasks.StateReady, Reason: "customer called"},
			"sam took this job back: customer called"},
		{"transferred", tasks.Entry{Action: tasks.ActionTransferred, Actor: "sam", Holder: "ann", Assignee: "bo", From: tasks.StateReserved, To: tasks.StateReady},
			"sam transferred this job."},
		{"canceled with its batch", tasks.Entry{Action: tasks.ActionCanceled, Actor: tasks.System, Holder: "ann", From: tasks.StateReserved, To: tasks.StateCanceled},
			"This reservation ended: canceled with its batch."},
		{"expired", tasks.Entry{Action: tasks.ActionExpired, Actor: tasks.System, Holder: "ann", From: tasks.StateReserved, To: tasks.StateReady},
			"This reservation ended: your time ran out."},
		{"skipped, then opened again", tasks.Entry{Action: tasks.ActionSkipped, Actor: "ann", From: tasks.StateReserved, To: tasks.StateReady},
			"This reservation ended: you skipped it."},
		{"given back in a canceled batch", tasks.Entry{Action: tasks.ActionReleased, Actor: "ann", From: tasks.StateReserved, To: tasks.StateCanceled},
			"This reservation ended: you gave it back."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := EndedBecause(tc.ended, "ann"); got != tc.want {
				t.Errorf("EndedBecause = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestOutcomePhrases checks that the sentences the work page's script is
// given are outcome's words in endedSentence, whoever acted; and, for
// someone else, what the page says when opened after (EndedBecause), with
// their reason or without.
func TestOutcomePhrases(t *testing.T) {
	t.Parallel()
	var p map[string]map[tasks.Action]string
	if err := json.Unmarshal([]byte(outcomePhrases("ann")), &p); err != nil {
		t.Fatal(err)
	}
	for _, a := range endingActions {
		for kind, actor := range map[string]string{"own": "ann", "system": tasks.System, "other": "sam"} {
			got := strings.ReplaceAll(p[kind][a], actorMark, actor)
			want := endedSentence(outcome(a, actor, "ann"))
			if kind == "other" {
				want = EndedBecause(tasks.Entry{Action: a, Actor: actor}, "ann")
			}
			if got != want {
				t.Errorf("%s %s: script would say %q, want %q", kind, a, got, want)
			}
		}
		if why, ok := p["other_why"][a]; ok {
			got := strings.NewReplacer(actorMark, "sam", reasonMark, "customer called").Replace(why)
			if want := EndedBecause(tasks.Entry{Action: a, Actor: "sam", Reason: "customer called"}, "ann"); got != want {
				t.Errorf("other, saying why, %s: script would say %q, want %q", a, got, want)
			}
		}
	}
	if len(p["other_why"]) != 3 {
		t.Errorf("sentences with a reason for %v, want force_released, transferred and canceled", p["other_why"])
	}
}

func TestRecentOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		action tasks.Action
		actor  string
		state  tasks.State
		want   string
	}{
		{tasks.ActionCompleted, "ann", tasks.StateCompleted, "Completed"},
		{tasks.ActionReleased, "ann", tasks.StateReady, "Gave it back"},
		{tasks.ActionSkipped, "ann", tasks.StateReady, "Skipped"},
		{tasks.ActionFailed, "ann", tasks.StateReady, "Can't be done"},
		{tasks.ActionFailed, "ann", tasks.StateDead, "Can't be done (no attempts left)"},
		{tasks.ActionExpired, tasks.System, tasks.StateReady, "Time ran out"},
		{tasks.ActionForceReleased, "sam", tasks.StateReady, "Taken back by sam"},
		{tasks.ActionCanceled, "sam", tasks.StateCanceled, "Canceled by sam"},
		{tasks.ActionCanceled, tasks.System, tasks.StateCanceled, "Canceled with its batch"},
		{tasks.ActionReleased, "ann", tasks.StateCanceled, "Gave it back"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			w := notify.Work{Action: tc.action, Actor: tc.actor, State: tc.state}
			if got := RecentOutcome(w, "ann"); got != tc.want {
				t.Errorf("RecentOutcome = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestResultNotes(t *testing.T) {
	t.Parallel()
	notes, rest := resultNotes(json.RawMessage(`{"approved":"yes","notes":"<b>fine</b>"}`))
	if notes != "<b>fine</b>" {
		t.Errorf("notes = %q", notes)
	}
	if len(rest) != 1 || rest[0].Key != "approved" || rest[0].Value != "yes" {
		t.Errorf("other fields = %+v, want approved: yes", rest)
	}
}

// The warning comes in the lease's last fifth, said in its own words; the
// words of "Can't be done" say what it spends and where the job goes.
func TestLeaseAndFailWords(t *testing.T) {
	for _, c := range []struct {
		lease int
		ms    string
		words string
	}{
		{45, "9000", "Less than 9 seconds left."},
		{10, "5000", "Less than 5 seconds left."},
		{300, "60000", "Less than a minute left."},
		{3600, "60000", "Less than a minute left."},
	} {
		j := &tasks.Job{LeaseSeconds: c.lease}
		if warnMs(j) != c.ms || !strings.HasPrefix(warnWords(j), c.words) {
			t.Errorf("lease %d s: warn at %s ms, %q", c.lease, warnMs(j), warnWords(j))
		}
	}
	for _, c := range []struct {
		attempts, max int
		want          string
	}{
		{0, 3, "This spends attempt 1 of 3: the job goes back to its place in line"},
		{2, 3, "This spends the last of its 3 attempts: the job goes to the dead jobs"},
		{0, 1, "This spends the job's only attempt: it goes to the dead jobs"},
	} {
		if got := failWords(&tasks.Job{Attempts: c.attempts, MaxAttempts: c.max}); !strings.HasPrefix(got, c.want) {
			t.Errorf("%d of %d: %q", c.attempts, c.max, got)
		}
	}
}

// RecentBrief says what a completion answered, or why a reservation ended,
// in one short line.
func TestRecentBrief(t *testing.T) {
	for _, tc := range []struct {
		name   string
		w      notify.Work
		result string
		want   string
	}{
		{"completed with notes", notify.Work{Action: tasks.ActionCompleted}, `{"notes":"Booked\nas AP-77310","x":1}`, "Booked as AP-77310"},
		{"completed with fields", notify.Work{Action: tasks.ActionCompleted}, `{"decision":"refund","amount":12.5}`, "Decision: refund · Amount: 12.5"},
		{"completed with nothing", notify.Work{Action: tasks.ActionCompleted}, ``, ""},
		{"can't be done", notify.Work{Action: tasks.ActionFailed, Reason: "scan URL 404s"}, ``, "scan URL 404s"},
		{"given back", notify.Work{Action: tasks.ActionReleased}, ``, ""},
		{"a long reason, cut", notify.Work{Action: tasks.ActionFailed, Reason: strings.Repeat("é", 100)}, ``, strings.Repeat("é", 79) + "…"},
	} {
		if got := RecentBrief(tc.w, json.RawMessage(tc.result)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
