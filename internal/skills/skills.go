// Package skills reads and writes skills: a person's (what they can do,
// and how well) and a job's (what it asks of whoever takes it). Both are
// a set of names, each with a level from 1 to 5; a person may take a job
// when they have each of its skills at its level or above. The engine
// compares them (internal/tasks, lua/lib.lua) in the canonical form that
// String writes.
package skills

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MaxLevel is the highest level of a skill; 1 is the lowest, and the
// level of a skill named without one.
const MaxLevel = 5

// Most is how many skills one person or job may have.
const Most = 20

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Set is skills by name, each with its level (1 to MaxLevel).
type Set map[string]int

// Parse reads skills as people write them: names separated by commas,
// each optionally with ":level" ("de, contracts:4"). A name is 1 to 32
// lowercase letters, digits, "-" or "_", starting with a letter or digit;
// "" is no skills.
func Parse(text string) (Set, error) {
	var words []string
	for w := range strings.SplitSeq(text, ",") {
		if w = strings.TrimSpace(w); w != "" {
			words = append(words, w)
		}
	}
	return FromList(words)
}

// FromList reads skills given one by one ("de", "contracts:4"), as the API
// takes them.
func FromList(words []string) (Set, error) {
	if len(words) > Most {
		return nil, fmt.Errorf("at most %d skills", Most)
	}
	s := Set{}
	for _, w := range words {
		name, level, found := strings.Cut(strings.TrimSpace(w), ":")
		n := 1
		if found {
			var err error
			if n, err = strconv.Atoi(level); err != nil || n < 1 || n > MaxLevel {
				return nil, fmt.Errorf("%q: a level is a whole number from 1 to %d", w, MaxLevel)
			}
		}
		if !nameRE.MatchString(name) {
			return nil, fmt.Errorf("%q: a skill is 1 to 32 lowercase letters, digits, - or _", w)
		}
		if _, twice := s[name]; twice {
			return nil, fmt.Errorf("%q is named twice", name)
		}
		s[name] = n
	}
	return s, nil
}

// Names returns the skills' names in order.
func (s Set) Names() []string {
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// String writes the skills in canonical form, by name, each with its
// level: "contracts:4,de:1"; "" for none. Two equal sets write the same.
func (s Set) String() string {
	var b strings.Builder
	for i, name := range s.Names() {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", name, s[name])
	}
	return b.String()
}

// List returns the skills as people write them, by name: "de" for level
// 1, "contracts:4" otherwise.
func (s Set) List() []string {
	out := make([]string, 0, len(s))
	for _, name := range s.Names() {
		if s[name] == 1 {
			out = append(out, name)
		} else {
			out = append(out, fmt.Sprintf("%s:%d", name, s[name]))
		}
	}
	return out
}

// Covers reports whether someone with skills s may take a job asking for
// want: they have each of its skills at its level or above.
func (s Set) Covers(want Set) bool {
	for name, level := range want {
		if s[name] < level {
			return false
		}
	}
	return true
}
