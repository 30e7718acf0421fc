package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"claimdesk/internal/desk"
	"claimdesk/internal/tasks"
	"claimdesk/internal/webhooks"
)

// webhookCmd runs `webhook add`, `webhook list`, `webhook remove ID` and
// `webhook rotate ID`: the desk's actions as the command line, which
// manages every webhook.
func webhookCmd(ctx context.Context, what string, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlagSet(what, getenv)
	var url, events, queues string
	if what == "webhook add" {
		fs.StringVar(&url, "url", "", "where the events go: an https URL (http only to the networks of CLAIMDESK_WEBHOOK_ALLOW_NETWORKS)")
		fs.StringVar(&events, "events", "", "the event types it receives, comma-separated, of "+eventNames())
		fs.StringVar(&queues, "queues", "", "the queues whose events it receives, comma-separated (default every queue, those made later too)")
	}
	id, c, err := fs.parse(args)
	if err != nil {
		return err
	}
	switch {
	case what == "webhook add" && (id != "" || url == "" || events == ""):
		return usagef("usage: claimdesk webhook add --url URL --events EVENT,… [--queues QUEUE,…] (events: %s)", eventNames())
	case what == "webhook list" && id != "":
		return usagef("usage: claimdesk webhook list")
	case (what == "webhook remove" || what == "webhook rotate") && id == "":
		return usagef("usage: claimdesk %s ID (an ID that claimdesk webhook list shows)", what)
	}
	st, stop, err := c.openForCommand(ctx)
	if err != nil {
		return err
	}
	defer stop()
	switch what {
	case "webhook add":
		n := webhooks.NewEndpoint{URL: url}
		for _, e := range strings.Split(events, ",") {
			n.Events = append(n.Events, tasks.EventType(e))
		}
		if queues != "" {
			n.Queues = strings.Split(queues, ",")
		}
		e, secret, err := st.desk.AddWebhook(ctx, desk.CommandLine, n)
		if errors.Is(err, webhooks.ErrInvalid) {
			return usagef("%v", err) // a bad value on the command line
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "webhook %s added: %s of %s to %s\n", e.ID, e.EventList(), e.QueueList(), e.URL)
		fmt.Fprintf(stdout, "secret %s\n(shown this once: give it to the receiver now, claimdesk does not show it again)\n", secret)
	case "webhook list":
		list, err := st.desk.Webhooks(ctx, desk.CommandLine)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tURL\tOWNER\tEVENTS\tQUEUES\tENABLED\tFAILING SINCE\tLOST")
		for _, e := range list {
			enabled := "yes"
			if !e.Enabled {
				enabled = "no: " + e.DisabledReason
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", e.ID, e.URL, e.Owner, e.EventList(), e.QueueList(),
				enabled, timeOrDash(deref(e.FailingSince)), e.Lost)
		}
		return tw.Flush()
	case "webhook remove":
		if err := st.desk.RemoveWebhook(ctx, desk.CommandLine, id); err != nil {
			return fmt.Errorf("webhook %s: %w", id, err)
		}
		fmt.Fprintf(stdout, "webhook %s removed: nothing more is sent to it\n", id)
	case "webhook rotate":
		e, secret, err := st.desk.RotateWebhook(ctx, desk.CommandLine, id)
		if err != nil {
			return fmt.Errorf("webhook %s: %w", id, err)
		}
		fmt.Fprintf(stdout, "webhook %s: new secret %s\n(shown this once: give it to the receiver now, claimdesk does not show it again)\n", e.ID, secret)
		fmt.Fprintf(stdout, "the old secret signs beside it until %s\n", timeOrDash(deref(e.PreviousSecretUntil)))
	}
	return nil
}

// eventNames lists the event types, for the help and usage of webhook add.
func eventNames() string {
	return (&webhooks.Endpoint{Events: tasks.EventTypes}).EventList()
}

// deref is the time t points to, or the zero time for none.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
