package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// replicaTimeout is how long a change waits for its replicas to confirm
// it (Redis WAIT) before the caller is told to retry (503). Replicas on a
// healthy network confirm within a millisecond; a second without them
// means one is gone or far behind.
const replicaTimeout = time.Second

// minReplicas is how many replicas must confirm a change: the setting
// (Config.MinReplicas) when given, else 1 when every master of the store
// has a replica and 0 when one has none. It also returns how many the store
// has.
func minReplicas(ctx context.Context, rdb redis.UniversalClient, setting int) (n, have int, err error) {
	have, err = replicasOf(ctx, rdb)
	if err != nil {
		return 0, 0, fmt.Errorf("count the store's replicas: %w", err)
	}
	if setting == autoReplicas {
		return min(have, 1), have, nil
	}
	return setting, have, nil
}

// replicasOf returns how many replicas the master with the fewest has
// connected now.
func replicasOf(ctx context.Context, rdb redis.UniversalClient) (int, error) {
	count := func(ctx context.Context, c *redis.Client) (int, error) {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return 0, err
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
				return strconv.Atoi(v)
			}
		}
		return 0, nil // a replica itself: it has none of its own
	}
	switch c := rdb.(type) {
	case *redis.Client:
		return count(ctx, c)
	case *redis.ClusterClient:
		var mu sync.Mutex
		fewest := -1
		err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			n, err := count(ctx, m)
			mu.Lock()
			defer mu.Unlock()
			if fewest < 0 || n < fewest {
				fewest = n
			}
			return err
		})
		return max(fewest, 0), err
	}
	return 0, fmt.Errorf("cannot count the replicas of a %T", rdb)
}
