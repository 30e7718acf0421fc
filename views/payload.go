package views

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// stringKind tells the strings shown as more than text: "url" for an
// absolute http(s) address (shown as a link), "time" for an RFC 3339 time
// (shown in the viewer's zone); else "string".
func stringKind(v string) string {
	if u, err := url.Parse(v); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		!strings.ContainsAny(v, " \t\n") {
		return "url"
	}
	if _, err := time.Parse(time.RFC3339, v); err == nil {
		return "time"
	}
	if _, err := time.Parse(time.DateOnly, v); err == nil {
		return "date"
	}
	return "string"
}

// moneyWords are the keys (or the last word of keys) of amounts of money:
// a number under one of them, in an object that has a currency (an ISO
// 4217 code) or inside one that has, is shown as money in it.
var moneyWords = map[string]bool{
	"amount": true, "gross": true, "net": true, "vat": true, "tax": true, "total": true, "subtotal": true,
	"price": true, "fee": true, "cost": true, "balance": true, "refund": true, "paid": true, "due_amount": true,
}

// isMoneyKey reports whether key names an amount of money: "gross",
// "unit_price", "refundAmount".
func isMoneyKey(key string) bool {
	words := strings.Fields(strings.ToLower(Field{Key: key}.Label()))
	return len(words) > 0 && (moneyWords[words[len(words)-1]] || moneyWords[strings.Join(words, "_")])
}

// commonCurrencies are the ISO 4217 codes that, ending a key, make its
// number an amount of money in them whatever the key says before
// ("lifetime_value_eur").
var commonCurrencies = map[string]bool{
	"EUR": true, "USD": true, "GBP": true, "CHF": true, "JPY": true, "CAD": true, "AUD": true, "NZD": true,
	"SEK": true, "NOK": true, "DKK": true, "PLN": true, "CZK": true, "HUF": true, "CNY": true, "HKD": true,
	"SGD": true, "INR": true, "BRL": true, "MXN": true, "ZAR": true,
}

// keyCurrency is the currency a key names after its amount of money:
// "amount_eur" and "totalUSD" are amounts in EUR and USD, as is
// "lifetime_value_eur" (a common currency's code); "" else.
func keyCurrency(key string) string {
	words := strings.Fields(strings.ToLower(Field{Key: key}.Label()))
	n := len(words)
	if n < 2 {
		return ""
	}
	code := strings.ToUpper(words[n-1])
	if commonCurrencies[code] || moneyWords[words[n-2]] && isCurrency(code) {
		return code
	}
	return ""
}

// isCurrency reports whether v is an ISO 4217 code: three capital letters.
func isCurrency(v string) bool {
	if len(v) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if v[i] < 'A' || v[i] > 'Z' {
			return false
		}
	}
	return true
}

// markMoney marks the amounts of money among fields (and inside them) with
// their currency: the one of their object, else of the nearest object
// around it that has one.
func markMoney(fields []Field, currency string) {
	for _, f := range fields {
		if f.Key == "currency" && f.Kind == "string" && isCurrency(f.Value) {
			currency = f.Value
		}
	}
	for i := range fields {
		f := &fields[i]
		switch {
		case f.Kind == "object" || f.Kind == "array":
			markMoney(f.Items, currency)
		case f.Kind == "number" && keyCurrency(f.Key) != "":
			f.Currency = keyCurrency(f.Key)
		case f.Kind == "number" && currency != "" && isMoneyKey(f.Key):
			f.Currency = currency
		}
	}
}

// acronyms are the words a label writes in capitals.
var acronyms = map[string]bool{
	"id": true, "url": true, "uri": true, "sku": true, "vat": true, "po": true, "sla": true, "iban": true,
	"bic": true, "api": true, "eta": true, "ip": true, "pdf": true, "csv": true, "uuid": true, "kyc": true,
	"crm": true, "faq": true, "eu": true,
}

// Label says a payload key for people: "vat_rate" and "vatRate" as "VAT
// rate", "po_number" as "PO number"; a list's positions stay numbers.
func (f Field) Label() string {
	var b strings.Builder
	var prev rune
	for _, r := range f.Key {
		if r == '_' || r == '-' {
			r = ' '
		}
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	words := strings.Fields(b.String())
	for i, w := range words {
		if acronyms[w] {
			words[i] = strings.ToUpper(w)
		}
	}
	label := strings.Join(words, " ")
	if label == "" {
		return f.Key
	}
	first, n := utf8.DecodeRuneInString(label)
	return string(unicode.ToUpper(first)) + label[n:]
}

// Field is one node of a JSON payload, in the order the producer wrote it,
// for display as text (never as HTML).
type Field struct {
	Key string
	// Kind is "object", "array", "string", "url", "time", "date",
	// "number", "bool" or "null".
	Kind  string
	Value string
	// Items are the members of an object or array.
	Items []Field
	// Long marks strings that deserve a text block rather than a line.
	Long bool
	// Currency is the ISO 4217 code of a number that is an amount of
	// money (markMoney).
	Currency string
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
	fields := []Field{root}
	if root.Kind == "object" {
		fields = root.Items
	}
	markMoney(fields, "")
	return fields
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
		f.Kind, f.Value = stringKind(v), v
		f.Long = f.Kind == "string" && (len(v) > 80 || bytes.ContainsRune([]byte(v), '\n'))
	case json.Number:
		f.Kind, f.Value = "number", v.String()
	case bool:
		f.Kind, f.Value = "bool", strconv.FormatBool(v)
	default:
		f.Kind, f.Value = "null", "—"
	}
	return f, nil
}
