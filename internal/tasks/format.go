package tasks

import (
	"claimdesk/internal/keys"

	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// storageFormat names how the engine lays out its data in Redis. Format 2:
// job metadata as MessagePack values (lua/lib.lua), and jobs and batches
// known by their ULID alone inside their queue's keys. The format before it
// (JSON metadata, ids with their queue) was never marked.
const storageFormat = "2"

// ErrStorageFormat means the Redis holds claimdesk data in a format this
// version cannot read.
var ErrStorageFormat = errors.New("the store holds data of another claimdesk storage format")

// CheckFormat makes sure the store's data is in the format this version
// reads, before anything uses it: a store without queues is marked with
// it; one whose queues were made by a version of another format is
// refused, rather than misread job by job.
func (s *Store) CheckFormat(ctx context.Context) error {
	got, err := s.rdb.Get(ctx, keys.Format).Result()
	switch {
	case err == nil && got == storageFormat:
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
