package zset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// scriptCall is one run of a script on one key.
type scriptCall struct {
	key  string
	args []any
}

// runAll runs script once per call (see runAllResults) and drops the
// replies.
func (ix *core) runAll(ctx context.Context, script *redis.Script, calls []scriptCall) error {
	_, err := ix.runAllResults(ctx, script, calls)
	return err
}

// runAllResults runs script once per call in one pipeline with EVALSHA. The
// calls that met NOSCRIPT (a Redis that has not cached the script yet, or a
// failed-over replica) run again after one SCRIPT LOAD (on every master of a
// cluster), and those that still meet it (a failover in between) with EVAL:
// a pipeline cannot fall back on its own, and resending the script text
// with every call would multiply the request size. It returns the reply of
// each call.
func (ix *core) runAllResults(ctx context.Context, script *redis.Script, calls []scriptCall) ([]any, error) {
	out := make([]any, len(calls))
	idx := make([]int, len(calls))
	for i := range idx {
		idx[i] = i
	}
	for round := range 3 {
		eval := round == 2
		if round == 1 {
			if err := script.Load(ctx, ix.client).Err(); err != nil {
				return nil, fmt.Errorf("script load: %w", err)
			}
		}
		pl := ix.client.Pipeline()
		cmds := make([]*redis.Cmd, len(idx))
		for i, ci := range idx {
			c := calls[ci]
			if eval {
				cmds[i] = script.Eval(ctx, pl, []string{c.key}, c.args...)
			} else {
				cmds[i] = script.EvalSha(ctx, pl, []string{c.key}, c.args...)
			}
		}
		_, _ = pl.Exec(ctx) // every command carries its own error
		var again []int
		for i, cmd := range cmds {
			switch err := cmd.Err(); {
			case err == nil:
				out[idx[i]] = cmd.Val()
			case !eval && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")):
				again = append(again, idx[i])
			default:
				return nil, err
			}
		}
		if len(again) == 0 {
			return out, nil
		}
		idx = again
	}
	return out, nil // not reached: EVAL never answers NOSCRIPT
}

// counts runs one integer command per key in pipelines of MaxPipeline.
func (ix *core) counts(ctx context.Context, keys []string, cmd func(redis.Pipeliner, string) *redis.IntCmd) ([]int64, error) {
	out := make([]int64, 0, len(keys))
	for c := range slices.Chunk(keys, MaxPipeline) {
		pl := ix.client.Pipeline()
		cmds := make([]*redis.IntCmd, len(c))
		for i, key := range c {
			cmds[i] = cmd(pl, key)
		}
		if _, err := pl.Exec(ctx); err != nil {
			return nil, err
		}
		for _, c := range cmds {
			out = append(out, c.Val())
		}
	}
	return out, nil
}

// batch queues pipelined commands and executes them MaxPipeline at a time.
type batch struct {
	pl  redis.Pipeliner
	err error
}

func (ix *core) newBatch() *batch {
	return &batch{pl: ix.client.Pipeline()}
}

func (b *batch) add(ctx context.Context, queue func(redis.Pipeliner)) {
	if b.err != nil {
		return
	}
	queue(b.pl)
	if b.pl.Len() >= MaxPipeline {
		b.err = b.flush(ctx)
	}
}

func (b *batch) flush(ctx context.Context) error {
	if b.err != nil || b.pl.Len() == 0 {
		return b.err
	}
	_, b.err = b.pl.Exec(ctx)
	return b.err
}
