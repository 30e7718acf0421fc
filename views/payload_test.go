package views

import (
	"strings"
	"testing"
)

// Keys read as words; addresses, times and numbers are told from text.
func TestPayloadReadable(t *testing.T) {
	for key, want := range map[string]string{
		"vat_rate": "VAT rate", "accountAgeDays": "Account age days", "scan-url": "Scan URL",
		"1": "1", "ID": "ID", "__": "__", "déjà_vu": "Déjà vu", "po_number": "PO number", "sla_due": "SLA due",
		"vatId": "VAT ID", "idea": "Idea", "sku": "SKU", "lifetime_value_eur": "Lifetime value (EUR)",
		"mfa_enabled": "MFA enabled", "amountUSD": "Amount (USD)", "discount_pct": "Discount (%)", "eur": "EUR",
		"price_eur_cents": "Price EUR cents",
	} {
		if got := (Field{Key: key}).Label(); got != want {
			t.Errorf("Label(%q) = %q, want %q", key, got, want)
		}
	}
	fields := ParsePayload([]byte(`{"scan_url":"https://files.example.com/a.pdf","js":"javascript:alert(1)",` +
		`"text":"see https://x.example now","at":"2026-11-23T08:03:00Z","net":2273.80,"ok":true}`))
	kinds := map[string]string{}
	for _, f := range fields {
		kinds[f.Key] = f.Kind
	}
	want := map[string]string{"scan_url": "url", "js": "string", "text": "string", "at": "time", "net": "number", "ok": "bool"}
	for k, kind := range want {
		if kinds[k] != kind {
			t.Errorf("%s is a %q, want %q", k, kinds[k], kind)
		}
	}
}

// Amounts of money take the currency of their key, of their object, or
// of the nearest one around them, else the payload's only one; a rate or
// a count is no money, nor is an amount in an object whose currency is
// unknown; a calendar date is a date.
func TestPayloadMoneyAndDates(t *testing.T) {
	fields := ParsePayload([]byte(`{"invoice": {"currency": "CHF", "gross": 2617.1, "vat_rate": 0.081, "due": "2026-12-12",
		"lines": [{"qty": 46, "unit_price": 38.5}]}, "refundAmount": 12, "amount_eur": 1188, "days_age": 3, "other": {"currency": "euro", "total": 3},
		"lifetime_value_chf": 9504, "order_ref_abc": 7}`))
	byPath := map[string]Field{}
	var walk func(prefix string, fs []Field)
	walk = func(prefix string, fs []Field) {
		for _, f := range fs {
			byPath[prefix+f.Key] = f
			walk(prefix+f.Key+".", f.Items)
		}
	}
	walk("", fields)
	for path, want := range map[string]string{
		"invoice.gross": "CHF", "invoice.lines.1.unit_price": "CHF", "invoice.vat_rate": "", "invoice.lines.1.qty": "",
		"refundAmount": "CHF", "other.total": "", "amount_eur": "EUR", "days_age": "", "lifetime_value_chf": "CHF",
		"order_ref_abc": "",
	} {
		if got := byPath[path].Currency; got != want {
			t.Errorf("%s: currency %q, want %q", path, got, want)
		}
	}
	if k := byPath["invoice.due"].Kind; k != "date" {
		t.Errorf("a calendar date is of kind %q", k)
	}
	var b strings.Builder
	if err := PayloadView(fields).Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<data value="2617.1" data-number data-currency="CHF">2617.1 CHF</data>`, `<time datetime="2026-12-12" data-date-only>`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the payload view lacks %s", want)
		}
	}
}

// A list of objects is a table of the union of their keys, in the order
// first seen; a list of words is chips; a rate from 0 to 1 and a
// percentage are shown as percentages, anything else named so is not.
func TestPayloadTablesChipsAndRates(t *testing.T) {
	fields := ParsePayload([]byte(`{"lines": [{"sku": "A", "qty": 2}, {"qty": 1, "note": "late"}],
		"tags": ["billing", "duplicate_charge"], "photos": ["https://x.example/1.jpg"], "vat_rate": 0.081,
		"growth_rate": 1.5, "discount_pct": 15, "mixed": [1, {"a": 2}]}`))
	byKey := map[string]Field{}
	for _, f := range fields {
		byKey[f.Key] = f
	}
	cols, rows, ok := byKey["lines"].Table()
	var names []string
	for _, c := range cols {
		names = append(names, c.Key)
	}
	if !ok || strings.Join(names, ",") != "sku,qty,note" || len(rows) != 2 || rows[1][0].Kind != "none" ||
		rows[1][1].Value != "1" || rows[1][2].Value != "late" {
		t.Errorf("table %v %v %v", names, rows, ok)
	}
	if _, _, ok := byKey["tags"].Table(); ok || !byKey["tags"].Chips() || byKey["photos"].Chips() || !byKey["photos"].Plain() {
		t.Errorf("tags and photos: chips %v %v", byKey["tags"].Chips(), byKey["photos"].Chips())
	}
	if byKey["mixed"].Chips() || byKey["mixed"].Plain() {
		t.Error("a list holding an object is no list of values")
	}
	for key, want := range map[string]string{"vat_rate": "0.081", "growth_rate": "", "discount_pct": "0.15"} {
		if got := byKey[key].Percent; got != want {
			t.Errorf("%s: percent %q, want %q", key, got, want)
		}
	}
	var b strings.Builder
	if err := PayloadView(fields).Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<th scope="col" title="qty" class="num">Qty</th>`, `<li class="chip">duplicate_charge</li>`,
		`<data value="0.081" data-number data-percent>8.1 %</data>`, `<data value="0.15" data-number data-percent>15 %</data>`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the payload view lacks %s", want)
		}
	}
}
