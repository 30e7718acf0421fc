package keys

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The names are the stored format: a change here strands existing data.
func TestNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Pattern, "cd:*"},
		{Format, "cd:format"},
		{Queues, "cd:queues"},
		{Users, "cd:{people}:users"},
		{Audit, "cd:audit"},
		{Online, "cd:online"},
		{LastAction, "cd:lastaction"},
		{User("ana"), "cd:{people}:user:ana"},
		{Token("0123456789abcdef"), "cd:{people}:token:0123456789abcdef"},
		{UserTokens("ana"), "cd:{people}:usertokens:ana"},
		{OldUsers, "cd:users"},
		{OldUser("ana"), "cd:user:ana"},
		{OldToken("0123456789abcdef"), "cd:token:0123456789abcdef"},
		{OldUserTokens("ana"), "cd:usertokens:ana"},
		{APIToken("ab12"), "cd:apitoken:ab12"},
		{LoginThrottle("10.0.0.1"), "cd:loginthrottle:10.0.0.1"},
		{LoginThrottleName("10.0.0.1", "ab12"), "cd:loginthrottle:10.0.0.1|ab12"},
		{LoginFailures("ab12"), "cd:loginfailures:{ab12}"},
		{LoginGate("ab12"), "cd:logingate:{ab12}"},
		{RateLimit("address", "10.0.0.1"), "cd:rate:address:10.0.0.1"},
		{Session("tok"), "cd:session:tok"},
		{Instances, "cd:instances"},
		{Notices("i1"), "cd:notices:i1"},
		{CronLock("reclaim"), "cd:cronlock:reclaim"},
		{Recent("ana"), "cd:recent:ana"},
		{ForQueue("triage").Conf(), "cd:{triage}:conf"},
		{ForQueue("triage").Claims(), "cd:{triage}:claims"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// All gives every per-queue key, in the order of Parts, each
// under the queue's hash tag.
func TestAll(t *testing.T) {
	q := ForQueue("triage")
	want := []string{
		"conf", "ready", "scheduled", "reserved", "completed", "dead", "canceled",
		"meta", "payload", "result", "idem", "skips", "skipcount", "batches",
		"batchindex", "batchdone", "parked", "members", "claims", "holding", "numbers",
		"people", "waiting", "outbox", "drafts", "sla", "late", "readydue",
		"moving", "moved", "movedat", "away", "returns", "routed", "routes", "fallback", "heads",
	}
	var got []string
	for _, k := range q.All() {
		suffix, ok := strings.CutPrefix(k, "cd:{triage}:")
		if !ok {
			t.Fatalf("%q lacks the queue's hash tag", k)
		}
		got = append(got, suffix)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("All() = %q, want %q", got, want)
	}
	if q.Name() != "triage" {
		t.Fatalf("Name() = %q", q.Name())
	}
}

// ValidQueue, checked by hand, says what QueueNamePattern says.
func TestValidQueue(t *testing.T) {
	re := regexp.MustCompile("^" + QueueNamePattern + "$")
	long := strings.Repeat("a", 64)
	for _, name := range []string{"", "a", "0", "invoice-review", "a_b", "-a", "_a", "A", "a.b", "a b", "é", long, long + "a", "a-", "a_"} {
		if got, want := ValidQueue(name), re.MatchString(name); got != want {
			t.Errorf("ValidQueue(%q) = %v, the pattern says %v", name, got, want)
		}
	}
}
