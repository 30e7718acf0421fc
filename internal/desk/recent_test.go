package desk_test

import (
	"slices"
	"testing"
	"time"

	"claimdesk/internal/desk"
)

// What a change keeps of people is written before the change is answered,
// whoever ends the reservation: the holder, a supervisor, or cron's
// reclaim of an expired one, which is nobody's action.
func TestRecentWorkAndLastActionAreWrittenWithTheChange(t *testing.T) {
	f := newFixture(t)
	for _, title := range []string{"done", "taken back", "expired"} {
		f.enqueue(title)
	}
	r := f.claim(f.op)
	if _, err := f.desk.Complete(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, nil); err != nil {
		t.Fatal(err)
	}
	f.actedNow(f.op.Name)
	r = f.claim(f.op)
	if _, err := f.desk.ForceRelease(f.ctx, desk.Person(f.super), r.Job.ID, f.op.Name); err != nil {
		t.Fatal(err)
	}
	f.actedNow(f.super.Name)
	f.claim(f.op)       // the job taken back comes first again
	f.tick(time.Second) // its reservation ends first
	r = f.claim(f.op)
	claimedAt := f.now()
	f.tick(time.Duration(r.Job.LeaseSeconds+1) * time.Second)
	if n, _, err := f.tasks.ReclaimExpired(f.ctx, f.queue, 10); err != nil || n != 2 {
		t.Fatalf("reclaim: %d, %v; want both held jobs", n, err)
	}
	want := []string{
		"expired expired by system → ready",
		"taken back expired by system → ready",
		"taken back force_released by " + f.super.Name + " → ready",
		"done completed by " + f.op.Name + " → completed",
	}
	if got := f.recent(f.op.Name); !slices.Equal(got, want) {
		t.Errorf("recent work = %q, want %q", got, want)
	}
	if at := f.lastAction(f.op.Name); at.UnixMilli() != claimedAt.UnixMilli() {
		t.Errorf("the operator's last action at %v, want their last claim's, %v: the system's expiry is nobody's", at, claimedAt)
	}
}
