package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"claimdesk/internal/strictjson"
)

// Outcome is a queue's outcome form: what completing one of its jobs must
// say. A completed job's result is then one flat JSON object: the decision
// (one of Choices), each field by its name, typed, and the holder's notes.
// A queue without a form takes any result object.
type Outcome struct {
	// Choices, when given, are the decisions of which the holder picks
	// exactly one, stored as the result's "decision" (approve, reject,
	// escalate). 2 to 10, each a name (^[a-z0-9][a-z0-9_-]{0,39}$).
	Choices []string `json:"choices,omitempty"`
	// Fields are the named values the holder fills in; at most 20.
	Fields []OutcomeField `json:"fields,omitempty"`
}

// OutcomeField is one value of an outcome form.
type OutcomeField struct {
	// Name is the field's key in the result: ^[a-z][a-z0-9_]{0,39}$, not
	// "decision" or "notes".
	Name string `json:"name"`
	// Label is what the form shows; the name in words when empty. At most
	// 80 characters.
	Label string `json:"label,omitempty"`
	// Type is text (a string of at most 2000 characters), number (a JSON
	// number), yes_no (true or false) or one_of (one of Options).
	Type string `json:"type"`
	// Options are one_of's values: 2 to 20, each at most 80 characters.
	Options []string `json:"options,omitempty"`
	// Required fields must be given; RequiredFor, only when the decision
	// is one of those choices (a reason to reject).
	Required    bool     `json:"required,omitempty"`
	RequiredFor []string `json:"required_for,omitempty"`
}

// The types of an outcome field.
const (
	FieldText   = "text"
	FieldNumber = "number"
	FieldYesNo  = "yes_no"
	FieldOneOf  = "one_of"
)

// Limits of an outcome form, and of its text values.
const (
	maxChoices       = 10
	maxOutcomeFields = 20
	maxOptions       = 20
	maxLabel         = 80
	MaxOutcomeText   = 2000
)

// Empty reports whether the form asks for nothing: the queue has none.
func (o *Outcome) Empty() bool {
	return o == nil || len(o.Choices) == 0 && len(o.Fields) == 0
}

// outcomeName reports whether s is a choice or field name: a lowercase
// letter or digit (a field: a letter), then up to 39 of them or _ (a
// choice: or -).
func outcomeName(s string, choice bool) bool {
	if len(s) == 0 || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z'
		digit := '0' <= c && c <= '9'
		switch {
		case letter:
		case digit && (i > 0 || choice):
		case (c == '_' || c == '-' && choice) && i > 0:
		default:
			return false
		}
	}
	return true
}

// Validate checks the form itself.
func (o Outcome) Validate() error {
	if len(o.Choices) == 1 || len(o.Choices) > maxChoices {
		return invalid("outcome.choices", "must be 2 to %d choices, or none", maxChoices)
	}
	for i, c := range o.Choices {
		if !outcomeName(c, true) {
			return invalid(fmt.Sprintf("outcome.choices[%d]", i), "must match ^[a-z0-9][a-z0-9_-]{0,39}$")
		}
		if slices.Index(o.Choices, c) < i {
			return invalid(fmt.Sprintf("outcome.choices[%d]", i), "repeats %q", c)
		}
	}
	if len(o.Fields) > maxOutcomeFields {
		return invalid("outcome.fields", "must be at most %d fields", maxOutcomeFields)
	}
	for i, f := range o.Fields {
		at := fmt.Sprintf("outcome.fields[%d]", i)
		switch {
		case !outcomeName(f.Name, false):
			return invalid(at+".name", "must match ^[a-z][a-z0-9_]{0,39}$")
		case f.Name == "decision" || f.Name == "notes":
			return invalid(at+".name", "%q is taken by the result itself", f.Name)
		case slices.IndexFunc(o.Fields, func(g OutcomeField) bool { return g.Name == f.Name }) < i:
			return invalid(at+".name", "repeats %q", f.Name)
		case utf8.RuneCountInString(f.Label) > maxLabel || !utf8.ValidString(f.Label):
			return invalid(at+".label", "must be at most %d characters of UTF-8", maxLabel)
		case f.Required && len(f.RequiredFor) > 0:
			return invalid(at+".required_for", "is for a field not always required")
		}
		for j, c := range f.RequiredFor {
			if !slices.Contains(o.Choices, c) {
				return invalid(fmt.Sprintf("%s.required_for[%d]", at, j), "%q is not one of the choices", c)
			}
		}
		switch f.Type {
		case FieldText, FieldNumber, FieldYesNo:
			if len(f.Options) > 0 {
				return invalid(at+".options", "are for one_of only")
			}
		case FieldOneOf:
			if len(f.Options) < 2 || len(f.Options) > maxOptions {
				return invalid(at+".options", "must be 2 to %d options", maxOptions)
			}
			for j, opt := range f.Options {
				if strings.TrimSpace(opt) != opt || opt == "" || utf8.RuneCountInString(opt) > maxLabel || !utf8.ValidString(opt) {
					return invalid(fmt.Sprintf("%s.options[%d]", at, j), "must be 1 to %d characters, without spaces around", maxLabel)
				}
				if slices.Index(f.Options, opt) < j {
					return invalid(fmt.Sprintf("%s.options[%d]", at, j), "repeats %q", opt)
				}
			}
		default:
			return invalid(at+".type", "must be text, number, yes_no or one_of")
		}
	}
	return nil
}

// ParseOutcome reads a form from its JSON (strict: no unknown or repeated
// keys); empty text is no form.
func ParseOutcome(raw string) (*Outcome, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" || raw == "null" {
		return nil, nil
	}
	if e := strictjson.Check([]byte(raw), reflect.TypeOf(Outcome{})); e != nil {
		return nil, invalid(e.In("outcome"), "%s", e.Problem)
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var o Outcome
	if err := dec.Decode(&o); err != nil {
		return nil, invalid("outcome", "must be an outcome form: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Empty() {
		return nil, nil
	}
	return &o, nil
}

// String is the form as stored: its JSON, or "" for none.
func (o *Outcome) String() string {
	if o.Empty() {
		return ""
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// Indent is the form as a person edits it: indented JSON, or "" for none.
func (o *Outcome) Indent() string {
	if o.Empty() {
		return ""
	}
	b, _ := json.MarshalIndent(o, "", "  ")
	return string(b)
}

// OutcomeError says which parts of a result do not fit its queue's
// outcome form, each in a few words, in the form's order. It matches
// ErrInvalid with errors.Is.
type OutcomeError struct {
	// Fields maps "decision", a field's name or another key of the result
	// to what is wrong with it.
	Fields map[string]string
	order  []string
}

func (e *OutcomeError) Error() string {
	parts := make([]string, len(e.order))
	for i, k := range e.order {
		parts[i] = k + " " + e.Fields[k]
	}
	return "result does not fit the queue's outcome form: " + strings.Join(parts, "; ")
}

// Is makes an OutcomeError an ErrInvalid.
func (e *OutcomeError) Is(target error) bool { return target == ErrInvalid }

func (e *OutcomeError) add(key, problem string) {
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	if _, ok := e.Fields[key]; ok {
		return // the first problem of a value is the one to mend first
	}
	e.order = append(e.order, key)
	e.Fields[key] = problem
}

// Check checks a result (a JSON object, or empty) against the form: the
// decision is one of its choices, each field has its type, the required
// ones are there, and nothing else is but "notes" (text). A queue without
// a form takes any result. The error is an *OutcomeError, or a
// *ValidationError when the result is not a JSON object.
func (o *Outcome) Check(result json.RawMessage) error {
	if o.Empty() {
		return nil
	}
	var got map[string]json.RawMessage
	if trimmed := bytes.TrimSpace(result); len(trimmed) > 0 && string(trimmed) != "null" {
		if trimmed[0] != '{' || json.Unmarshal(trimmed, &got) != nil {
			return invalid("result", "must be a JSON object")
		}
	}
	var e OutcomeError
	decision := ""
	if len(o.Choices) > 0 {
		raw, ok := got["decision"]
		switch {
		case !ok || string(raw) == "null":
			e.add("decision", "is required: one of "+strings.Join(o.Choices, ", "))
		case json.Unmarshal(raw, &decision) != nil || !slices.Contains(o.Choices, decision):
			e.add("decision", "must be one of "+strings.Join(o.Choices, ", "))
			decision = ""
		}
	}
	for _, f := range o.Fields {
		raw, ok := got[f.Name]
		if !ok || string(raw) == "null" {
			if f.Required || decision != "" && slices.Contains(f.RequiredFor, decision) {
				e.add(f.Name, "is required")
			}
			continue
		}
		if problem := f.check(raw); problem != "" {
			e.add(f.Name, problem)
		}
	}
	if raw, ok := got["notes"]; ok {
		var notes string
		if json.Unmarshal(raw, &notes) != nil {
			e.add("notes", "must be text")
		}
	}
	extra := make([]string, 0)
	for k := range got {
		if k != "notes" && (k != "decision" || len(o.Choices) == 0) && !slices.ContainsFunc(o.Fields, func(f OutcomeField) bool { return f.Name == k }) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		e.add(k, "is not a field of the outcome form")
	}
	if len(e.order) > 0 {
		return &e
	}
	return nil
}

// thousands matches a number written with commas between groups of
// three digits: 1,250 or 1,250.5.
var thousands = regexp.MustCompile(`^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$`)

// readNumber reads a number as a person types it: 1250, 12.5, -3, or with
// commas between thousands (1,250.5). A comma anywhere else (12,50, a
// decimal comma) is refused rather than guessed at, as is what is not a
// finite number.
func readNumber(v string) (float64, error) {
	if thousands.MatchString(v) {
		v = strings.ReplaceAll(v, ",", "")
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, errors.New("not a number")
	}
	return n, nil
}

// check says what is wrong with a field's value (JSON, not null), or "".
func (f OutcomeField) check(raw json.RawMessage) string {
	switch f.Type {
	case FieldNumber:
		var n float64
		if raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
			return "must be a number"
		}
	case FieldYesNo:
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return "must be true or false"
		}
	default:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "must be text"
		}
		switch {
		case f.Type == FieldOneOf && !slices.Contains(f.Options, s):
			return "must be one of " + strings.Join(f.Options, ", ")
		case strings.TrimSpace(s) == "":
			return "must not be blank"
		case utf8.RuneCountInString(s) > MaxOutcomeText:
			return fmt.Sprintf("must be at most %d characters", MaxOutcomeText)
		}
	}
	return ""
}

// FromForm builds a result from what a person typed in the form (each
// value by its field's name; "decision" and "notes" too): text trimmed,
// numbers read, yes/no from "yes" or "no", blanks left out. What cannot
// be read as its type, or does not pass Check, is an *OutcomeError (all
// of it at once, in the form's order); the result is then not built.
func (o *Outcome) FromForm(get func(name string) string) (json.RawMessage, error) {
	result := map[string]any{}
	var e OutcomeError
	if d := strings.TrimSpace(get("decision")); d != "" {
		result["decision"] = d
	}
	for _, f := range o.Fields {
		v := strings.TrimSpace(get(f.Name))
		if v == "" {
			continue
		}
		switch f.Type {
		case FieldNumber:
			n, err := readNumber(v)
			if err != nil {
				e.add(f.Name, "must be a number")
				continue
			}
			result[f.Name] = n
		case FieldYesNo:
			switch v {
			case "yes":
				result[f.Name] = true
			case "no":
				result[f.Name] = false
			default:
				e.add(f.Name, "must be yes or no")
			}
		default:
			result[f.Name] = v
		}
	}
	if notes := strings.TrimSpace(get("notes")); notes != "" {
		result["notes"] = notes
	}
	var b json.RawMessage
	if len(result) > 0 {
		var err error
		if b, err = json.Marshal(result); err != nil {
			return nil, errors.New("outcome: " + err.Error())
		}
	}
	var ce *OutcomeError
	if err := o.Check(b); errors.As(err, &ce) {
		for _, k := range ce.order {
			e.add(k, ce.Fields[k])
		}
	} else if err != nil {
		return nil, err
	}
	if len(e.order) > 0 {
		// In the form's order: the decision, then the fields.
		at := func(k string) int {
			if k == "decision" {
				return -1
			}
			return slices.IndexFunc(o.Fields, func(f OutcomeField) bool { return f.Name == k })
		}
		slices.SortStableFunc(e.order, func(a, b string) int { return at(a) - at(b) })
		return nil, &e
	}
	return b, nil
}
