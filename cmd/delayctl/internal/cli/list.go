package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
)

func newList(sys *IO, g *globals) *cobra.Command {
	var (
		q      find.Query
		state  string
		all    bool
		asJSON bool
		api    apiFlag
	)
	from, to := &timeValue{now: sys.Now}, &timeValue{now: sys.Now}
	cmd := &cobra.Command{
		Use:   "list [--topic T] [--from TIME] [--to TIME] [--key PREFIX] [--state S]",
		Short: "Find stored tasks by due time, topic, key prefix and state",
		Long: `list reads the stored tasks due in [--from, --to) from HBase, salt by salt
(never Redis), in due-time order, and prints a page of them: pending ones by
default (--state cancelled, delivered-or-expired or any for others). A page
ends after --limit tasks or 50,000 rows read; when there is more, list
prints the command for the next page (--cursor) on stderr, or with --all
goes on to the end. With --api (or DELAYQ_API) it asks delayd's HTTP API
instead, which also answers in embedded mode.`,
		Example: `  delayctl list --topic orders --from now --to +1h
  delayctl list --key order-4 --all --json
  delayctl list --api 127.0.0.1:8080 --state any --limit 20`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q.State, q.From, q.To = payload.Phase(state), from.ms(), to.ms()
			if !cmd.Flags().Changed("from") {
				q.From = 0
			}
			if !cmd.Flags().Changed("to") {
				q.To = 0
			}
			if err := q.Validate(); err != nil {
				return usageError{err}
			}
			page, closer, err := g.lister(cmd.Context(), sys, &api)
			if err != nil {
				return err
			}
			defer closer()
			n := 0
			for {
				p, err := page(cmd.Context(), q)
				if err != nil {
					return err
				}
				for _, t := range p.Tasks {
					if asJSON {
						b, _ := json.Marshal(t)
						fmt.Fprintf(sys.Stdout, "%s\n", b)
					} else {
						printListed(sys.Stdout, t)
					}
				}
				n += len(p.Tasks)
				if p.Next == "" {
					fmt.Fprintf(sys.Stderr, "%d tasks\n", n)
					return nil
				}
				if !all {
					fmt.Fprintf(sys.Stderr, "%d tasks; more: add --cursor %s\n", n, p.Next)
					return nil
				}
				q.Cursor = p.Next
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.Topic, "topic", "", "business topic (exact)")
	f.StringVar(&q.KeyPrefix, "key", "", "business key prefix")
	f.Var(from, "from", "due at or after (default: the start; pending tasks start at now): "+timeHelp)
	f.Var(to, "to", "due before (default: no end): "+timeHelp)
	f.StringVar(&state, "state", "pending", "pending, cancelled, delivered-or-expired or any")
	f.IntVar(&q.Limit, "limit", find.DefaultLimit, fmt.Sprintf("tasks per page, 1 to %d", find.MaxLimit))
	f.StringVar(&q.Cursor, "cursor", "", "go on where a page ended (list prints it)")
	f.BoolVar(&all, "all", false, "follow every page to the end")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per task")
	api.register(cmd)
	return cmd
}

// pager returns one page of a listing.
type pager func(ctx context.Context, q find.Query) (find.View, error)

// lister returns the pager of the --api flag, else one over HBase, and
// what closes it.
func (g *globals) lister(ctx context.Context, sys *IO, api *apiFlag) (pager, func(), error) {
	if api.set() {
		c, err := api.client(sys, g.timeout)
		if err != nil {
			return nil, nil, err
		}
		return c.list, func() {}, nil
	}
	store, err := g.openStore(ctx)
	if err != nil {
		return nil, nil, withAPIHint(err)
	}
	return func(ctx context.Context, q find.Query) (find.View, error) {
		p, err := find.List(ctx, store, q, sys.Now())
		if err != nil {
			return find.View{}, g.hbaseError(err)
		}
		return find.ViewOf(p), nil
	}, store.Close, nil
}

func (c *apiClient) list(ctx context.Context, q find.Query) (find.View, error) {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("topic", q.Topic)
	set("key", q.KeyPrefix)
	set("state", string(q.State))
	set("cursor", q.Cursor)
	if q.From != 0 {
		v.Set("from", strconv.FormatInt(q.From, 10))
	}
	if q.To != 0 {
		v.Set("to", strconv.FormatInt(q.To, 10))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var p find.View
	err := c.get(ctx, "/v1/tasks", v, &p)
	return p, err
}

func printListed(w io.Writer, t find.Item) {
	key := "-"
	switch {
	case t.Key != nil:
		key = strconv.Quote(*t.Key)
	case t.KeyBase64 != nil:
		key = "base64:" + *t.KeyBase64
	}
	topic := t.Topic
	if topic == "" {
		topic = "-"
	}
	hs := make([]string, 0, len(t.Headers))
	for k, v := range t.Headers {
		hs = append(hs, k+"="+strconv.Quote(v))
	}
	slices.Sort(hs)
	line := fmt.Sprintf("%s  %-20s  %-10s  %s  key=%s  %dB  %s", payload.FormatTime(t.AtMs), t.State, topic, t.ID, key, t.ValueBytes, strings.Join(hs, " "))
	fmt.Fprintln(w, strings.TrimRight(line, " "))
}
