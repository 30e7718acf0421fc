package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// request is shaped like claimdesk's request bodies: fields, an embedded
// struct, a list of nested requests, data of the sender's own.
type request struct {
	inner
	Title   string          `json:"title"`
	Seconds int             `json:"seconds"`
	Items   []request       `json:"items"`
	Data    json.RawMessage `json:"data"`
	At      *time.Time      `json:"at"`
	Tags    map[string]request
	Skipped string `json:"-"`
}

type inner struct {
	Token string `json:"token"`
	Title string `json:"inner_title"`
}

func TestCheck(t *testing.T) {
	shape := reflect.TypeFor[*request]()
	tests := []struct {
		name string
		data string
		t    reflect.Type
		path string // "" and problem "": accepted
		want string // part of the problem
	}{
		{name: "plain", data: `{"title":"Check invoice","seconds":5,"items":[{"title":"x"}],"data":{"a":[1,{"b":null}]}}`, t: shape},
		{name: "text in many scripts", data: `{"t":"Prüfung • 請求書 • فاتورة • חשבונית • 😀 • \u00e9"}`},
		{name: "an escaped surrogate pair", data: `{"t":"\ud83d\ude00 \uD83D\uDE00"}`},
		{name: "an escaped backslash before u", data: `{"t":"\\ud800"}`},
		{name: "the same key in two objects", data: `[{"a":1},{"a":1}]`},
		{name: "keys of data in any case", data: `{"data":{"Title":1,"title":2},"Tags":{"Title":{"title":"x"}}}`, t: shape},
		{name: "a field json ignores", data: `{"Skipped":"x"}`, t: shape},

		{name: "not JSON", data: `{"a":}`, want: "is not valid JSON"},
		{name: "invalid UTF-8 in a value", data: "{\"data\":{\"note\":\"caf\xe9\"}}", path: ".data.note", want: "must be valid UTF-8"},
		{name: "invalid UTF-8 in a key", data: "{\"ok\":[{\"k\xff\":1}]}", path: ".ok[0]", want: "must be valid UTF-8"},
		{name: "an overlong encoding", data: "[\"\xc0\xaf\"]", path: "[0]", want: "must be valid UTF-8"},
		{name: "a surrogate encoded in UTF-8", data: "\"\xed\xa0\x80\"", want: "must be valid UTF-8"},
		{name: "a lone first half", data: `{"t":"a\ud800b"}`, path: ".t", want: `\ud800 is the first half`},
		{name: "a first half before a letter", data: `{"t":"\ud800\u0041"}`, path: ".t", want: `\ud800 is the first half`},
		{name: "two first halves", data: `{"t":"\ud800\ud800"}`, path: ".t", want: `\ud800 is the first half`},
		{name: "a lone second half", data: `{"t":"\uDC00"}`, path: ".t", want: `\udc00 is the second half`},
		{name: "a duplicate key", data: `{"title":"a","title":"b"}`, path: ".title", want: "appears twice"},
		{name: "a duplicate key by escape", data: `{"x":[{"a":1,"\u0061":2}]}`, path: ".x[0].a", want: "appears twice"},
		{name: "a duplicate key deep in data", data: `{"data":{"a b":{"k":1,"k":2}}}`, t: shape, path: `.data["a b"].k`, want: "appears twice"},
		{name: "a field in capitals", data: `{"Title":"x"}`, t: shape, path: ".Title", want: `must be written "title"`},
		{name: "a field twice in two cases", data: `{"title":"x","TITLE":"y"}`, t: shape, path: ".TITLE", want: `must be written "title"`},
		{name: "a field folded by Unicode", data: `{"ſeconds":5}`, t: shape, path: `["\u017feconds"]`, want: `must be written "seconds"`},
		{name: "an embedded field", data: `{"Token":"x"}`, t: shape, path: ".Token", want: `must be written "token"`},
		{name: "a field of a nested request", data: `{"items":[{"title":"x"},{"Items":[]}]}`, t: shape, path: ".items[1].Items", want: `must be written "items"`},
		{name: "a field of a map's request", data: `{"Tags":{"k":{"Title":"x"}}}`, t: shape, path: ".Tags.k.Title", want: `must be written "title"`},
		{name: "a map in other case", data: `{"tags":{}}`, t: shape, path: ".tags", want: `must be written "Tags"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := Check([]byte(tc.data), tc.t)
			if tc.want == "" {
				if e != nil {
					t.Fatalf("Check(%s) = %v, want nil", tc.data, e)
				}
				return
			}
			if e == nil {
				t.Fatalf("Check(%s) = nil, want %q", tc.data, tc.want)
			}
			if e.Path != tc.path || !strings.Contains(e.Problem, tc.want) {
				t.Fatalf("Check(%s) = %q %q, want %q and a problem with %q", tc.data, e.Path, e.Problem, tc.path, tc.want)
			}
		})
	}
}

func TestErrorNamesTheField(t *testing.T) {
	e := &Error{Path: ".customer.name", Problem: "must be valid UTF-8"}
	if got := e.In("payload"); got != "payload.customer.name" {
		t.Errorf("In(payload) = %q", got)
	}
	if got := e.Error(); got != "customer.name must be valid UTF-8" {
		t.Errorf("Error() = %q", got)
	}
	if got := (&Error{Problem: "x"}).In(""); got != "body" {
		t.Errorf("the top as a request = %q, want body", got)
	}
}

// PathAt names the value encoding/json's type errors point into, with the
// indexes encoding/json leaves out, whatever the kind of value at fault.
func TestPathAt(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{"items":[{"title":"a"},{"title":5}]}`, ".items[1].title"},
		{`{"title":5 }`, ".title"},
		{`{"seconds":"x","title":"a"}`, ".seconds"},
		{`{"items":{"a":1}}`, ".items"},
		{`{"items":[{"items":[{"title":[1]}]}]}`, ".items[0].items[0].title"},
		{`{"title":{"a":1}}`, ".title"},
		{`{"items":[1]}`, ".items[0]"},
		{`{"seconds":1.5}`, ".seconds"},
		{`{"tags":{"first name":{"title":true}}}`, `.tags["first name"].title`},
		{`[1]`, ""},
	} {
		var r request
		err := json.Unmarshal([]byte(tc.data), &r)
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			t.Fatalf("%s: %v is no type error", tc.data, err)
		}
		if got, ok := PathAt([]byte(tc.data), typeErr.Offset); !ok || got != tc.want {
			t.Errorf("PathAt(%s, %d) = %q, %v; want %q", tc.data, typeErr.Offset, got, ok, tc.want)
		}
	}
	if _, ok := PathAt([]byte(`{"a":1}`), 0); ok {
		t.Error("offset 0 falls in no value, yet PathAt found one")
	}
	if _, ok := PathAt([]byte(`{"a":1,"a":"x"}`), 14); ok {
		t.Error("a text not strict before the offset, yet PathAt found a value")
	}
}

// FuzzCheck compares Check with an oracle built on encoding/json's own
// tokenizer: each accepts exactly what the other accepts, and Check never
// panics on any input.
func FuzzCheck(f *testing.F) {
	shape := reflect.TypeFor[request]()
	f.Fuzz(func(t *testing.T, data []byte) {
		e := Check(data, shape)
		problem := oracle(data)
		if (e == nil) != (problem == "") {
			t.Fatalf("Check(%q) = %v, but the oracle says %q", data, e, problem)
		}
	})
}

// escape matches one escape of a JSON string, left to right.
var escape = regexp.MustCompile(`\\(u[0-9a-fA-F]{4}|.)`)

// oracle says what is not strict in data for Check's type request, found
// with json.Decoder's tokens ("" for nothing).
func oracle(data []byte) string {
	if !json.Valid(data) {
		return "not JSON"
	}
	if !utf8.Valid(data) {
		return "not UTF-8" // in valid JSON, only strings hold non-ASCII bytes
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var read func(kind string) string
	// kind is "request", "requests" or "" (data).
	read = func(kind string) string {
		before := dec.InputOffset()
		tok, _ := dec.Token()
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '[' {
				for dec.More() {
					elem := ""
					if kind == "requests" {
						elem = "request"
					}
					if p := read(elem); p != "" {
						return p
					}
				}
				_, _ = dec.Token()
				return ""
			}
			seen := map[string]bool{}
			for dec.More() {
				kb := dec.InputOffset()
				key, _ := dec.Token()
				k := key.(string)
				if p := lone(data[kb:dec.InputOffset()]); p != "" {
					return p
				}
				if seen[k] {
					return "duplicate " + k
				}
				seen[k] = true
				child := ""
				if kind == "request" {
					for _, name := range []string{"title", "seconds", "items", "data", "at", "Tags", "token", "inner_title"} {
						if k != name && strings.EqualFold(k, name) {
							return "case of " + k
						}
					}
					switch k {
					case "items":
						child = "requests"
					case "Tags":
						child = "tags"
					}
				} else if kind == "tags" {
					child = "request"
				}
				if p := read(child); p != "" {
					return p
				}
			}
			_, _ = dec.Token()
			return ""
		case string:
			return lone(data[before:dec.InputOffset()])
		}
		return ""
	}
	return read("request")
}

// lone finds an escaped half of a surrogate pair in a string token (and
// what precedes it in the text: separators).
func lone(raw []byte) string {
	raw = raw[bytes.IndexByte(raw, '"'):]
	found := escape.FindAllIndex(raw, -1)
	for i := 0; i < len(found); i++ {
		r := unit(raw, found[i])
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return "lone second half"
		case r >= 0xd800 && r <= 0xdbff:
			if i+1 == len(found) || found[i+1][0] != found[i][1] {
				return "lone first half"
			}
			if next := unit(raw, found[i+1]); next < 0xdc00 || next > 0xdfff {
				return "lone first half"
			}
			i++
		}
	}
	return ""
}

// unit is the UTF-16 unit of a \u escape, or -1 for another escape.
func unit(raw []byte, at []int) int64 {
	if raw[at[0]+1] != 'u' {
		return -1
	}
	n, _ := strconv.ParseInt(string(raw[at[0]+2:at[1]]), 16, 32)
	return n
}

// BenchmarkCheck measures a payload at the size limit.
func BenchmarkCheck(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(`{"rows":[`)
	for i := 0; buf.Len() < 64<<10; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"id":` + strconv.Itoa(i) + `,"name":"Nordwind GmbH – Prüfung","note":"\u00e9 \ud83d\ude00"}`)
	}
	buf.WriteString(`]}`)
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := Check(data, nil); err != nil {
			b.Fatal(err)
		}
	}
}
