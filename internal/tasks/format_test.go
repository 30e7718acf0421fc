package tasks

import (
	"claimdesk/internal/keys"

	"context"
	"errors"
	"testing"

	"claimdesk/internal/tasks/taskstest"
)

func TestCheckFormat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name    string
		prepare func(s *Store) error
		wantErr bool
	}{
		{"an empty store is marked", func(*Store) error { return nil }, false},
		{"a marked store with queues", func(s *Store) error {
			if err := s.CheckFormat(ctx); err != nil {
				return err
			}
			_, err := s.PutQueue(ctx, Queue{Name: "mail"})
			return err
		}, false},
		{"queues of an earlier version, never marked", func(s *Store) error {
			return s.rdb.SAdd(ctx, keys.Queues, "mail").Err()
		}, true},
		{"a store of format 2, which this version reads", func(s *Store) error {
			if err := s.rdb.SAdd(ctx, keys.Queues, "mail").Err(); err != nil {
				return err
			}
			return s.rdb.Set(ctx, keys.Format, "2", 0).Err()
		}, false},
		{"another format's mark", func(s *Store) error {
			return s.rdb.Set(ctx, keys.Format, "4", 0).Err()
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb := taskstest.Redis(t).Client()
			defer rdb.Close()
			s := New(rdb)
			if err := tc.prepare(s); err != nil {
				t.Fatal(err)
			}
			err := s.CheckFormat(ctx)
			if got := errors.Is(err, ErrStorageFormat); got != tc.wantErr || (err != nil && !got) {
				t.Fatalf("CheckFormat = %v; want ErrStorageFormat %v", err, tc.wantErr)
			}
			if !tc.wantErr {
				if mark, _ := rdb.Get(ctx, keys.Format).Result(); mark != storageFormat {
					t.Fatalf("format mark %q after CheckFormat, want %q", mark, storageFormat)
				}
			}
		})
	}
}
