package views

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"claimdesk/internal/tasks"
)

// Humanize says a name for people: "needs_review" as "Needs review".
func Humanize(name string) string { return Field{Key: name}.Label() }

// fieldLabel is what the outcome form shows for a field: its label, or
// its name in words.
func fieldLabel(f tasks.OutcomeField) string {
	if f.Label != "" {
		return f.Label
	}
	return Humanize(f.Name)
}

// requiredWords marks a field the holder must fill in, always or for some
// decisions.
func requiredWords(f tasks.OutcomeField) string {
	switch {
	case f.Required:
		return "(required)"
	case len(f.RequiredFor) > 0:
		words := ""
		for i, c := range f.RequiredFor {
			switch {
			case i == 0:
			case i == len(f.RequiredFor)-1:
				words += " or "
			default:
				words += ", "
			}
			words += Humanize(c)
		}
		return "(required for " + words + ")"
	}
	return "(optional)"
}

type option struct{ value, label string }

// fieldOptions are the buttons of a yes/no or short one-of field.
func fieldOptions(f tasks.OutcomeField) []option {
	if f.Type == tasks.FieldYesNo {
		return []option{{"yes", "Yes"}, {"no", "No"}}
	}
	opts := make([]option, len(f.Options))
	for i, o := range f.Options {
		opts[i] = option{o, o}
	}
	return opts
}

// FreeRows is how many name/value rows the complete form offers where the
// queue has no outcome form.
const FreeRows = 3

// FreeRowKey names the problem of free row i (from 0) in Work.Problems.
func FreeRowKey(i int) string { return "row-" + strconv.Itoa(i+1) }

// problemID is the id of the problem shown for the named value, for its
// control's aria-describedby; "" when there is none.
func problemID(w Work, name string) string {
	if w.Problems[name] == "" {
		return ""
	}
	return "problem-" + name
}

// invalid marks a control whose value has a problem, and points to it.
func invalid(w Work, name string) templ.Attributes {
	if w.Problems[name] == "" {
		return nil
	}
	return templ.Attributes{"aria-invalid": "true", "aria-describedby": "problem-" + name}
}

// problemWords says a problem of the outcome form in a sentence: "is
// required" as "Required."
func problemWords(name, why string) string {
	switch why {
	case "is required":
		if name == "decision" {
			return "Choose one."
		}
		return "Required."
	case "must be a number":
		return "Enter a number, like 1250 or 12.5."
	}
	return "This " + why + "."
}

// typedAt is the i-th value typed as name (a refused complete's free
// rows), "" else.
func typedAt(v url.Values, name string, i int) string {
	if i < len(v[name]) {
		return v[name][i]
	}
	return ""
}

// unsaved is what a holder sent with an action refused because their
// reservation had ended, to copy: the notes, then every other value they
// typed ("name: value"), the free rows' too.
func unsaved(w Work) string {
	var lines []string
	if notes := strings.TrimSpace(w.typed("notes")); notes != "" {
		lines = append(lines, notes)
	}
	names := slices.Sorted(maps.Keys(w.Typed))
	for _, name := range names {
		switch name {
		case "_csrf", "token", "next", "seconds", "notes", "key", "value":
			continue
		}
		if v := strings.TrimSpace(w.typed(name)); v != "" {
			lines = append(lines, name+": "+v)
		}
	}
	for i, k := range w.Typed["key"] {
		if v := typedAt(w.Typed, "value", i); strings.TrimSpace(k) != "" {
			lines = append(lines, strings.TrimSpace(k)+": "+v)
		}
	}
	return strings.Join(lines, "\n")
}
