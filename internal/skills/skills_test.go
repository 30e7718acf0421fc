package skills

import (
	"slices"
	"testing"
)

// Skills are read as people write them, written in one canonical form
// whatever order they came in, and refused with a reason when malformed.
func TestParse(t *testing.T) {
	t.Parallel()
	s, err := Parse(" vat:3, de ,contracts:5")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "contracts:5,de:1,vat:3" {
		t.Errorf("String = %q", got)
	}
	if got := s.List(); !slices.Equal(got, []string{"contracts:5", "de", "vat:3"}) {
		t.Errorf("List = %q", got)
	}
	if again, err := Parse(s.String()); err != nil || again.String() != s.String() {
		t.Errorf("Parse(String) = %v, %v", again, err)
	}
	if empty, err := Parse(" , "); err != nil || len(empty) != 0 || empty.String() != "" {
		t.Errorf("Parse of nothing = %v, %v", empty, err)
	}
	many := make([]string, Most+1)
	for i := range many {
		many[i] = string(rune('a'+i)) + "x"
	}
	for _, bad := range [][]string{{"DE"}, {"de:0"}, {"de:6"}, {"de:x"}, {"de", "de:2"}, {""}, {"a|b"}, {"-de"}, many} {
		if _, err := FromList(bad); err == nil {
			t.Errorf("FromList(%q) was taken", bad)
		}
	}
}

// Someone's skills cover a job's when they have each of its skills at its
// level or above.
func TestCovers(t *testing.T) {
	t.Parallel()
	have := Set{"de": 2, "vat": 3}
	for want, ok := range map[string]bool{"": true, "de": true, "de:2": true, "de:3": false, "de,vat:3": true, "fr": false, "de,fr": false} {
		w, err := Parse(want)
		if err != nil {
			t.Fatal(err)
		}
		if got := have.Covers(w); got != ok {
			t.Errorf("Covers(%q) = %v, want %v", want, got, ok)
		}
	}
}
