package views

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Field is one node of a JSON payload, in the order the producer wrote it,
// for display as text (never as HTML).
type Field struct {
	Key string
	// Kind is "object", "array", "string", "number", "bool" or "null".
	Kind  string
	Value string
	// Items are the members of an object or array.
	Items []Field
	// Long marks strings that deserve a text block rather than a line.
	Long bool
}

// ParsePayload turns raw JSON into fields; invalid JSON comes back as one
// string field holding the raw text.
func ParsePayload(raw []byte) []Field {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	root, err := parseValue(dec, "")
	if err != nil {
		return []Field{{Key: "payload", Kind: "string", Value: string(raw)}}
	}
	if root.Kind == "object" {
		return root.Items
	}
	return []Field{root}
}

func parseValue(dec *json.Decoder, key string) (Field, error) {
	tok, err := dec.Token()
	if err != nil {
		return Field{}, err
	}
	f := Field{Key: key}
	switch v := tok.(type) {
	case json.Delim:
		f.Kind = "object"
		if v == '[' {
			f.Kind = "array"
		}
		for i := 0; dec.More(); i++ {
			k := strconv.Itoa(i + 1)
			if f.Kind == "object" {
				t, err := dec.Token()
				if err != nil {
					return Field{}, err
				}
				k, _ = t.(string)
			}
			item, err := parseValue(dec, k)
			if err != nil {
				return Field{}, err
			}
			f.Items = append(f.Items, item)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return Field{}, err
		}
	case string:
		f.Kind, f.Value = "string", v
		f.Long = len(v) > 80 || bytes.ContainsRune([]byte(v), '\n')
	case json.Number:
		f.Kind, f.Value = "number", v.String()
	case bool:
		f.Kind, f.Value = "bool", strconv.FormatBool(v)
	default:
		f.Kind, f.Value = "null", "—"
	}
	return f, nil
}
