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

// parseMinReplicas reads CLAIMDESK_MIN_REPLICAS: -1 when it is not
// given, else a number from 0 to 16.
func parseMinReplicas(setting string) (int, error) {
	if setting == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(setting)
	if err != nil || n < 0 || n > 16 {
		return 0, usagef("bad min replicas %q: want a number from 0 to 16", setting)
	}
	return n, nil
}

// minReplicas is how many replicas must confirm a change: the setting
// when given (parseMinReplicas), else 1 when every master of the store has
// a replica and 0 when one has none. It also returns how many the store
// has.
func minReplicas(ctx context.Context, rdb redis.UniversalClient, setting int) (n, have int, err error) {
	have, err = replicasOf(ctx, rdb)
	if err != nil {
		return 0, 0, fmt.Errorf("count the store's replicas: %w", err)
	}
	if setting < 0 {
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
