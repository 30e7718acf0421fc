package views

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"slices"
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
	words := keyWords(key)
	return len(words) > 0 && (moneyWords[words[len(words)-1]] || moneyWords[strings.Join(words, "_")])
}

// keyWords are the words of a key, in lower case: "vatRate" and
// "vat_rate" are "vat" and "rate".
func keyWords(key string) []string {
	var b strings.Builder
	var prev rune
	for _, r := range key {
		if r == '_' || r == '-' {
			r = ' '
		}
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return strings.Fields(b.String())
}

// rateWords end the keys of rates, written as a fraction of one
// ("vat_rate": 0.081 is 8.1 %); percentWords, those of percentages
// written as such ("discount_pct": 15 is 15 %).
var (
	rateWords    = map[string]bool{"rate": true, "ratio": true, "share": true}
	percentWords = map[string]bool{"pct": true, "percent": true, "percentage": true}
)

// percentOf is a number's value as a fraction to show as a percentage,
// when its key says it is one: a rate (last word rate, ratio or share)
// from 0 to 1, or a percentage (last word pct, percent or percentage);
// "" else.
func percentOf(key, value string) string {
	words := keyWords(key)
	if len(words) == 0 {
		return ""
	}
	n, err := strconv.ParseFloat(value, 64)
	switch last := words[len(words)-1]; {
	case err != nil:
		return ""
	case rateWords[last] && n >= 0 && n <= 1:
		return value
	case percentWords[last]:
		return strconv.FormatFloat(n/100, 'f', -1, 64)
	}
	return ""
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
	words := keyWords(key)
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

// markNumbers marks the amounts of money among fields (and inside them)
// with their currency, and the rates and percentages with their fraction
// (percentOf). An amount's currency is the one its key ends in
// ("total_eur"), else that of its object's "currency", else of the
// nearest object around it that has one, else the payload's only one
// (when all its "currency" values agree).
func markNumbers(fields []Field, currency string) {
	for _, f := range fields {
		if f.Key == "currency" {
			currency = "" // a currency the page does not know stops the one around
			if f.Kind == "string" && isCurrency(f.Value) {
				currency = f.Value
			}
		}
	}
	for i := range fields {
		f := &fields[i]
		switch {
		case f.Kind == "object" || f.Kind == "array":
			markNumbers(f.Items, currency)
		case f.Kind != "number":
		case keyCurrency(f.Key) != "":
			f.Currency = keyCurrency(f.Key)
		case currency != "" && isMoneyKey(f.Key):
			f.Currency = currency
		default:
			f.Percent = percentOf(f.Key, f.Value)
		}
	}
}

// onlyCurrency is the currency every "currency" of the payload names,
// "" when it names none or more than one.
func onlyCurrency(fields []Field) string {
	found := ""
	var walk func(fs []Field) bool
	walk = func(fs []Field) bool {
		for _, f := range fs {
			if f.Key == "currency" && f.Kind == "string" && isCurrency(f.Value) {
				if found != "" && found != f.Value {
					return false
				}
				found = f.Value
			}
			if !walk(f.Items) {
				return false
			}
		}
		return true
	}
	if !walk(fields) {
		return ""
	}
	return found
}

// acronyms are the words a label writes in capitals; a common
// currency's code is one too.
var acronyms = map[string]bool{
	"id": true, "url": true, "uri": true, "sku": true, "vat": true, "po": true, "sla": true, "iban": true,
	"bic": true, "api": true, "eta": true, "ip": true, "pdf": true, "csv": true, "uuid": true, "kyc": true,
	"crm": true, "faq": true, "eu": true, "mfa": true, "sso": true, "gdpr": true, "http": true, "ui": true,
}

// Label says a payload key for people: "vat_rate" and "vatRate" as "VAT
// rate", "po_number" as "PO number", "mfa_enabled" as "MFA enabled"; an
// amount in a currency, or a percentage, with its unit apart:
// "lifetime_value_eur" as "Lifetime value (EUR)", "discount_pct" as
// "Discount (%)". A list's positions stay numbers.
func (f Field) Label() string {
	words := keyWords(f.Key)
	unit := ""
	if n := len(words); n > 1 {
		if code := keyCurrency(f.Key); code != "" {
			words, unit = words[:n-1], " ("+code+")"
		} else if percentWords[words[n-1]] {
			words, unit = words[:n-1], " (%)"
		}
	}
	for i, w := range words {
		if acronyms[w] || commonCurrencies[strings.ToUpper(w)] {
			words[i] = strings.ToUpper(w)
		}
	}
	label := strings.Join(words, " ")
	if label == "" {
		return f.Key
	}
	first, n := utf8.DecodeRuneInString(label)
	return string(unicode.ToUpper(first)) + label[n:] + unit
}

// Table is a list of objects as a table: the columns are every key of its
// objects, in the order first seen, and the rows the objects' values
// under them (a key an object lacks: a Field of Kind "none"). ok is false
// for anything else.
func (f Field) Table() (columns []Field, rows [][]Field, ok bool) {
	if f.Kind != "array" || len(f.Items) == 0 {
		return nil, nil, false
	}
	var keys []string
	for _, item := range f.Items {
		if item.Kind != "object" {
			return nil, nil, false
		}
		for _, m := range item.Items {
			if !slices.Contains(keys, m.Key) {
				keys = append(keys, m.Key)
				columns = append(columns, Field{Key: m.Key})
			}
		}
	}
	for _, item := range f.Items {
		row := make([]Field, len(keys))
		for i, k := range keys {
			row[i] = Field{Key: k, Kind: "none"}
			if j := slices.IndexFunc(item.Items, func(m Field) bool { return m.Key == k }); j >= 0 {
				row[i] = item.Items[j]
			}
		}
		rows = append(rows, row)
	}
	return columns, rows, true
}

// maxChip is the longest string shown as a chip.
const maxChip = 40

// Chips reports whether the field is a list of short words without
// spaces (tags: "billing", "duplicate_charge"): shown as chips.
func (f Field) Chips() bool {
	if f.Kind != "array" || len(f.Items) == 0 {
		return false
	}
	for _, item := range f.Items {
		if item.Kind != "string" || item.Value == "" || utf8.RuneCountInString(item.Value) > maxChip || strings.ContainsAny(item.Value, " \t\n") {
			return false
		}
	}
	return true
}

// Plain reports whether the field is a list of single values (no objects
// or lists in it): shown one under the other, without positions.
func (f Field) Plain() bool {
	if f.Kind != "array" || len(f.Items) == 0 {
		return false
	}
	return !slices.ContainsFunc(f.Items, func(item Field) bool { return item.Kind == "object" || item.Kind == "array" })
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
	// money; Percent, a number that is a rate or a percentage, as a
	// fraction of one (markNumbers).
	Currency string
	Percent  string
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
	markNumbers(fields, onlyCurrency(fields))
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

// numberColumn reports whether a table's column holds numbers only (it
// lines up on the right).
func numberColumn(rows [][]Field, key string) bool {
	for _, row := range rows {
		for _, cell := range row {
			if cell.Key == key && cell.Kind != "number" && cell.Kind != "none" {
				return false
			}
		}
	}
	return true
}

// percentText is a fraction of one as a percentage, before the page's
// script writes it in the viewer's locale: "0.081" as "8.1 %".
func percentText(fraction string) string {
	n, err := strconv.ParseFloat(fraction, 64)
	if err != nil {
		return fraction
	}
	return strconv.FormatFloat(math.Round(n*1e8)/1e6, 'f', -1, 64) + " %"
}
