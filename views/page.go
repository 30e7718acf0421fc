// Package views holds claimdesk's pages as templ components. Handlers give
// them plain data; nothing here talks to Redis.
package views

import (
	"fmt"
	"strconv"
	"time"
)

// Page is what every page's layout needs.
type Page struct {
	Title string
	// User and Role are empty on the login page.
	User string
	Role string
	// CSRF goes into every form and htmx request.
	CSRF string
	// Path is the request path, to mark the current navigation entry.
	Path string
	// Flash is a one-time message from the previous action.
	Flash string
}

// Supervisor reports whether the page's user is a supervisor.
func (p Page) Supervisor() bool { return p.Role == "supervisor" }

// ago says how long ago t was, for people: "just now", "4 min", "3 h 5 min".
func ago(t time.Time, now time.Time) string {
	return span(now.Sub(t))
}

func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// clock formats a time for a table cell, in UTC.
func clock(t *time.Time) string {
	if t == nil {
		return "–"
	}
	return t.UTC().Format("Jan 2 15:04:05")
}

// iso formats a time for machines (data attributes, <time datetime>).
func iso(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// countdown renders the time left until t as m:ss, as the script does.
func countdown(t *time.Time, now time.Time) string {
	if t == nil {
		return ""
	}
	left := t.Sub(now)
	if left <= 0 {
		return "expired"
	}
	secs := int(left.Round(time.Second).Seconds())
	if secs >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", secs/3600, secs/60%60, secs%60)
	}
	return fmt.Sprintf("%d:%02d", secs/60, secs%60)
}

func itoa(n int) string  { return strconv.Itoa(n) }
func i64(n int64) string { return strconv.FormatInt(n, 10) }
