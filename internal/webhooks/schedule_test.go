package webhooks

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []time.Duration
	}{
		{"0s,5s,5m,30m,2h,5h,10h,10h", DefaultSchedule},
		{"1m", []time.Duration{time.Minute}},
		{"0", []time.Duration{0}},
		{" 0s, 1m30s ,24h", []time.Duration{0, 90 * time.Second, 24 * time.Hour}},
		{"1s" + strings.Repeat(",1s", 19), slices.Repeat([]time.Duration{time.Second}, 20)},
	} {
		got, err := ParseSchedule(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSchedule(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseScheduleRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, says string }{
		{"", `"" is no duration`},
		{"5s,,5m", `"" is no duration`},
		{"5s,soon", `"soon" is no duration`},
		{"5", `"5" is no duration`},
		{"-5s", `"-5s" is not from 0 to 24h`},
		{"0s,24h1s", `"24h1s" is not from 0 to 24h`},
		{"0s,5s,0s", `wait 3 is 0: only the first may be`},
		{"1s" + strings.Repeat(",1s", 20), `21 waits, want 1 to 20`},
	} {
		got, err := ParseSchedule(tc.in)
		if err == nil || err.Error() != tc.says {
			t.Errorf("ParseSchedule(%q) = %v, %v; want the error %q", tc.in, got, err, tc.says)
		}
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	fixed := func(x float64) func() float64 { return func() float64 { return x } }
	for _, tc := range []struct {
		name    string
		attempt int
		rnd     float64
		want    time.Duration
		ok      bool
	}{
		{"before the first", 0, 0.99, 0, true},
		{"after the first, the least", 1, 0, 4500 * time.Millisecond, true},
		{"after the first, the middle", 1, 0.5, 5 * time.Second, true},
		{"after the second, near the most", 2, 0.75, 5*time.Minute + 15*time.Second, true},
		{"after the seventh", 7, 0.5, 10 * time.Hour, true},
		{"after the eighth, the last", 8, 0.5, 0, false},
		{"after the ninth", 9, 0.5, 0, false},
		{"no such attempt", -1, 0.5, 0, false},
	} {
		got, ok := Delay(DefaultSchedule, tc.attempt, fixed(tc.rnd))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: Delay(DefaultSchedule, %d, %v) = %v, %v; want %v, %v", tc.name, tc.attempt, tc.rnd, got, ok, tc.want, tc.ok)
		}
	}
	// Just under 1, the most: just under 10% more.
	if got, _ := Delay(DefaultSchedule, 3, fixed(0.999999)); got < 32*time.Minute+59*time.Second || got >= 33*time.Minute {
		t.Errorf("Delay after the third, rnd near 1 = %v, want just under 33m", got)
	}
}
