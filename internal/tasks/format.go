package tasks

import (
	"claimdesk/internal/keys"

	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// storageFormat names how the engine lays out its data in Redis. Format 4:
// job metadata as MessagePack values, the count of its fields first
// (lua/lib.lua), so that fields added later read as absent in records
// stored before; jobs and batches known by their ULID alone inside their
// queue's keys; a person's tally of a day as counters, one field each
// (tally.go). Format 3 was the same but for the tallies, one record per
// person and day; format 2 was format 3 without the count. This version
// reads the records of both as they are (decodeMeta, decodeTally), and
// marks such a store as format 4 (CheckFormat), which a version of an
// earlier format refuses. The format before them (JSON metadata, ids with
// their queue) was never marked.
const storageFormat = "4"

// readableFormats are the earlier formats whose data this version reads
// as it is, marking the store with its own format.
var readableFormats = []string{"2", "3"}

// ErrStorageFormat means the Redis holds claimdesk data in a format this
// version cannot read.
var ErrStorageFormat = errors.New("the store holds data of another claimdesk storage format")

// CheckFormat makes sure the store's data is in the format this version
// reads, before anything uses it: a store without queues, or of a format
// it reads too (readableFormats), is marked with it; one whose queues were
// made by a version of another format is refused, rather than misread job
// by job.
func (s *Store) CheckFormat(ctx context.Context) error {
	got, err := s.rdb.Get(ctx, keys.Format).Result()
	switch {
	case err == nil && got == storageFormat:
		return nil
	case err == nil && slices.Contains(readableFormats, got):
		if err := s.rdb.Set(ctx, keys.Format, storageFormat, 0).Err(); err != nil {
			return redisErr(err)
		}
		return nil
	case err == nil:
		return fmt.Errorf("%w: it is format %s, this version reads format %s", ErrStorageFormat, got, storageFormat)
	case err != redis.Nil:
		return redisErr(err)
	}
	n, err := s.rdb.SCard(ctx, keys.Queues).Result()
	if err != nil {
		return redisErr(err)
	}
	if n > 0 {
		return fmt.Errorf("%w: its %d queues were made by an earlier version (JSON job metadata), which this one cannot read", ErrStorageFormat, n)
	}
	if err := s.rdb.SetNX(ctx, keys.Format, storageFormat, 0).Err(); err != nil {
		return redisErr(err)
	}
	return nil
}
