package tasks

import (
	"claimdesk/internal/keys"

	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// storageFormat names how the engine lays out its data in Redis. Format 3:
// job metadata as MessagePack values, the count of its fields first
// (lua/lib.lua), so that fields added later read as absent in records
// stored before; jobs and batches known by their ULID alone inside their
// queue's keys. Format 2 was the same without the count: this version
// reads its records as they are (decodeMeta), and marks a store of format
// 2 as format 3 (CheckFormat), which a version of format 2 refuses. The
// format before it (JSON metadata, ids with their queue) was never marked.
const storageFormat = "3"

// readableFormats are the earlier formats whose data this version reads
// as it is, marking the store with its own format.
var readableFormats = []string{"2"}

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
