package views

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"

	"claimdesk/internal/tasks"
)

// A draft, as the work page saves it, is its complete form as typed: a
// JSON object of each field's name to its value, or to its values (the
// free name/value rows) as a list. A client of the API may save any JSON
// object; the page shows what it can of one.

// notTyped are the complete form's fields that are not the holder's words.
var notTyped = []string{"_csrf", "token", "next"}

// TypedDraft is the complete form as typed, as a draft.
func TypedDraft(form url.Values) json.RawMessage {
	d := make(map[string]any, len(form))
	for name, vs := range form {
		switch {
		case slices.Contains(notTyped, name) || len(vs) == 0:
		case len(vs) == 1 && name != "key" && name != "value":
			d[name] = vs[0]
		default:
			d[name] = vs
		}
	}
	raw, _ := json.Marshal(d) // strings only: cannot fail
	return raw
}

// TypedFrom is a draft as the complete form shows it again: a text as
// itself, a list as one value per item, any other value as its JSON.
func TypedFrom(draft json.RawMessage) url.Values {
	var d map[string]json.RawMessage
	if json.Unmarshal(draft, &d) != nil {
		return url.Values{}
	}
	typed := make(url.Values, len(d))
	for name, raw := range d {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			list = []json.RawMessage{raw}
		}
		for _, v := range list {
			typed[name] = append(typed[name], draftValue(v))
		}
	}
	return typed
}

// draftValue is a draft's value as text.
func draftValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// DraftLines are a draft's values to read: the notes first, then each
// other value as "name: value", the free rows' as "key: value", empty
// ones left out.
func DraftLines(draft json.RawMessage) []string {
	return typedLines(TypedFrom(draft))
}

// typedLines are what was typed in the complete form (DraftLines).
func typedLines(typed url.Values) []string {
	var lines []string
	if notes := strings.TrimSpace(typed.Get("notes")); notes != "" {
		lines = append(lines, notes)
	}
	for _, name := range slices.Sorted(maps.Keys(typed)) {
		switch {
		case slices.Contains(notTyped, name), name == "seconds", name == "notes", name == "key", name == "value":
			continue
		}
		if v := strings.TrimSpace(typed.Get(name)); v != "" {
			lines = append(lines, name+": "+v)
		}
	}
	for i, k := range typed["key"] {
		if v := typedAt(typed, "value", i); strings.TrimSpace(k) != "" {
			lines = append(lines, strings.TrimSpace(k)+": "+strings.TrimSpace(v))
		}
	}
	return lines
}

// draftEnded says how the reservation of a kept draft ended: "taken back
// by sam", "canceled by sam", "its time ran out".
func draftEnded(e *tasks.DraftEnd) string {
	switch {
	case e == nil:
		return ""
	case e.Action == tasks.ActionExpired:
		return "kept when its time ran out"
	case e.Action == tasks.ActionCanceled && e.By == tasks.System:
		return "kept when its batch was canceled"
	case e.Action == tasks.ActionCanceled:
		return "kept when " + e.By + " canceled the job"
	}
	return "kept when " + e.By + " took the job back"
}
