package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/topics"
)

// maxValue bounds a value read from a file or stdin: the 1 MiB payload
// limit of delayd's default, with room to say so instead of truncating.
const maxValue = 16 << 20

// clientFlags are the flags of the commands that write to delayq's input.
type clientFlags struct {
	node     nodeValue
	input    string
	slow     string
	maxDelay durationValue
}

// nodeValue is the --node flag: unset means the process id mod 1024.
type nodeValue struct {
	n   int64
	set bool
}

func (v *nodeValue) String() string {
	if !v.set {
		return ""
	}
	return strconv.FormatInt(v.n, 10)
}

func (v *nodeValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > delayq.MaxNode {
		return fmt.Errorf("%q is not a node id 0..%d", s, delayq.MaxNode)
	}
	v.n, v.set = n, true
	return nil
}

func (v *nodeValue) Type() string { return "int" }

func (v *nodeValue) id() int64 {
	if v.set {
		return v.n
	}
	return int64(os.Getpid() % (delayq.MaxNode + 1))
}

func (c *clientFlags) register(cmd *cobra.Command, node bool) {
	fs := cmd.Flags()
	if node {
		fs.Var(&c.node, "node",
			"snowflake node id 0..1023 for generated ids; unique per running process (default: process id mod 1024)")
	}
	c.maxDelay = durationValue{d: payload.DefaultMaxDelay, name: "--max-delay"}
	fs.Var(&c.maxDelay, "max-delay",
		"delayd's --max-delay: a due time further ahead, or a longer delay or interval, is refused here as delayd would refuse it (default 720h)")
	fs.StringVar(&c.input, "input-topic", topics.Input, "input topic")
	fs.StringVar(&c.slow, "slow-topic", topics.Slow, "input topic of tasks due more than an hour ahead")
	_ = fs.MarkHidden("input-topic")
	_ = fs.MarkHidden("slow-topic")
}

func (c *clientFlags) client(sys *IO, g *globals) (*delayq.Client, error) {
	return delayq.New(delayq.Config{Brokers: g.brokers, TLS: g.auth.TLS(), SASL: g.auth.SASL(), Node: c.node.id(), Input: c.input, Slow: c.slow,
		MaxDelay: c.maxDelay.d, Now: sys.Now})
}

// checkDue applies delayd's rules (payload's) to the due time of --at or
// --after (whichever was given) against --max-delay: the reasons name the
// flag.
func (c *clientFlags) checkDue(atSet bool, at time.Time, after time.Duration, now time.Time) error {
	var err error
	if atSet {
		err = payload.CheckAhead("--at", at.UnixMilli(), now, c.maxDelay.d)
	} else {
		err = payload.CheckDelay("--after", after, c.maxDelay.d)
	}
	if err != nil {
		return usageError{err}
	}
	return nil
}

func newSubmit(sys *IO, g *globals) *cobra.Command { return taskCommand(sys, g, false) }

// newReplace is submit's twin for delay-op replace: --id required, no
// recurrence.
func newReplace(sys *IO, g *globals) *cobra.Command {
	cmd := taskCommand(sys, g, true)
	cmd.Use = "replace --id ID --topic T (--at TIME | --after DURATION) [flags] [VALUE]"
	cmd.Short = "Replace the task with this id: new value, headers and due time"
	cmd.Long = `replace writes a task with delay-op: replace: delayd stores it in place of
the task with this id, whichever of the two it reads first. The old task is
never delivered; the new one is delivered once, at its own due time. A
replace of an id with no task stored acts as a submit; one of an id
cancelled by id alone goes to delay-failed, and delayctl refuses it first
when it sees the block (see submit: --api, HBase, --id-check). It takes submit's flags, --id
required, and no recurrence (--every, --cron …).`
	cmd.Flags().Lookup("id").Usage = "id of the task to replace (required)"
	cmd.Example = `  delayctl replace --id reminder-42 --topic orders --after 2h '{"remind":"pay now"}'
  delayctl replace --id reminder-42 --topic orders --at 2030-01-02T15:04:05Z --file payload.json`
	return cmd
}

// taskCommand is submit, or replace.
func taskCommand(sys *IO, g *globals, replace bool) *cobra.Command {
	f := &taskFlags{
		replace: replace,
		at:      &timeValue{now: sys.Now, due: "--at"},
		after:   &durationValue{name: "--after"},
		every:   &durationValue{name: "--every"},
		until:   &timeValue{now: sys.Now, due: "--until"},
	}
	cmd := &cobra.Command{
		Use:   "submit --topic T (--at TIME | --after DURATION) [flags] [VALUE]",
		Short: "Submit a task: deliver a message to a topic later",
		Long: `submit writes a task to delayq's input (delay-input-slow when it is due more
than an hour ahead). The value is the argument, the contents of --file, or
stdin. It prints the task id (generated unless --id is given) and the due
time: cancel and inspect take both.

With --id it first looks the id up (through delayd's API with --api, else
in HBase's id row) and refuses, exit 1, an id that a cancel by id alone
still blocks: delayd would refuse the task into delay-failed ("id
cancelled"), which delayctl, writing to Kafka, cannot see. Without --api
the block's end is dated with delayd's default --max-delay and
--retention. When HBase cannot be reached it warns and submits; a cancel
by id still on its way in delay-input is not seen either.`,
		Example: `  delayctl submit --topic orders --after 10m --key order-42 -H trace=abc '{"remind":"pay"}'
  delayctl submit --topic orders --at 2030-01-02T15:04:05Z --id reminder-42 --file payload.json
  echo hello | delayctl submit --topic greetings --after 90s
  delayctl submit --topic reports --at 2030-01-02T09:00:00Z --cron '0 9 * * 1-5' --tz Asia/Shanghai --id daily-report '{}'
  delayctl submit --topic feed --after 1h --every 1h --count 24 --id feed-pet-7 '{}'`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("want at most one argument, the value; got %d (quote the value)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(cmd, sys); err != nil {
				return err
			}
			task, err := f.task(cmd, sys, args)
			if err != nil {
				return err
			}
			return f.send(cmd, sys, g, task)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.topic, "topic", "", "business topic to deliver to (required)")
	fs.Var(f.at, "at", "due time: "+timeHelp)
	fs.Var(f.after, "after", "delay from now: "+delayHelp)
	fs.StringVar(&f.id, "id", "", "task id, up to 128 bytes (default: a snowflake id)")
	fs.StringVar(&f.key, "key", "", "message key (default: none)")
	fs.StringArrayVarP(&f.headers, "header", "H", nil, "header key=value, repeatable")
	fs.StringVar(&f.file, "file", "", "read the value from this file (- for stdin)")
	if !replace {
		fs.Var(f.every, "every", "repeat every this long (at least 1s; "+delayHelp+"); the first occurrence at --at/--after")
		fs.StringVar(&f.cron, "cron", "", `repeat on this five-field cron schedule ("0 9 * * *", "@daily"), not with --every`)
		fs.StringVar(&f.tz, "tz", "", "IANA time zone of --cron (default UTC)")
		fs.Var(f.until, "until", "no occurrence after this time: "+timeHelp)
		fs.IntVar(&f.count, "count", 0, "at most this many occurrences (default: no limit)")
	}
	f.cf.register(cmd, !replace)
	f.api.register(cmd)
	fs.Lookup("api").Usage = "look --id up through delayd's HTTP API at this URL or host:port instead of HBase before sending (the task still goes to Kafka); the token comes from " + apiTokenVar
	fs.BoolVar(&f.idCheck, "id-check", true, "with --id, refuse an id that a cancel by id alone still blocks (looked up through --api, else HBase); false: send without looking")
	return cmd
}

// taskFlags are the flags of submit and replace.
type taskFlags struct {
	replace              bool
	topic, id, key, file string
	cron, tz             string
	count                int
	headers              []string
	cf                   clientFlags
	api                  apiFlag
	idCheck              bool
	at, until            *timeValue
	after, every         *durationValue
}

// check checks the flags before anything is read or sent.
func (f *taskFlags) check(cmd *cobra.Command, sys *IO) error {
	if err := require(cmd, "topic"); err != nil {
		return err
	}
	if err := requireID(cmd, f.replace); err != nil {
		return err
	}
	atSet, err := atOrAfter(cmd)
	if err != nil {
		return err
	}
	if len(f.id) > 128 {
		return usagef("--id: %d bytes, over the 128-byte limit", len(f.id))
	}
	if err := f.cf.checkDue(atSet, f.at.t, f.after.d, sys.Now()); err != nil {
		return err
	}
	if !cmd.Flags().Changed("every") {
		return nil
	}
	// A zero Every would be no series at all.
	if f.every.d < payload.MinEvery {
		return usagef("--every: %v is under the minimum %v", f.every.d, payload.MinEvery)
	}
	if err := payload.CheckDelay("--every", f.every.d, f.cf.maxDelay.d); err != nil {
		return usageError{err}
	}
	return nil
}

// task is the task the flags and the value (args, --file or stdin) make.
func (f *taskFlags) task(cmd *cobra.Command, sys *IO, args []string) (delayq.Task, error) {
	hs, err := parseHeaders(f.headers)
	if err != nil {
		return delayq.Task{}, err
	}
	value, err := readValue(sys, args, f.file)
	if err != nil {
		return delayq.Task{}, err
	}
	task := delayq.Task{ID: f.id, Topic: f.topic, Value: value, Headers: hs,
		Every: f.every.d, Cron: f.cron, TZ: f.tz, Until: f.until.t, Count: f.count}
	if cmd.Flags().Changed("key") {
		task.Key = []byte(f.key)
	}
	if cmd.Flags().Changed("at") {
		task.At = f.at.t
	} else {
		task.At = sys.Now().Add(f.after.d)
	}
	return task, nil
}

// send checks the task with the client, the id's block (--id-check), then
// sends it and prints what it sent.
func (f *taskFlags) send(cmd *cobra.Command, sys *IO, g *globals, task delayq.Task) error {
	c, err := f.cf.client(sys, g)
	if err != nil {
		return err
	}
	defer c.Close()
	// The client's checks (recurrence included) before any connection.
	if _, _, err := c.Message(task); err != nil {
		return usagef("%s", strings.TrimPrefix(err.Error(), delayq.ErrInvalid.Error()+": "))
	}
	ctx := cmd.Context()
	op, send := "submit", c.Submit
	if f.replace {
		op, send = "replace", c.Replace
	}
	if f.id != "" && f.idCheck {
		if err := checkID(ctx, sys, g, &f.api, f.id, op); err != nil {
			return err
		}
	}
	if err := g.checkKafka(ctx); err != nil {
		return err
	}
	r, err := send(ctx, task)
	if err != nil {
		return err
	}
	out := sys.Stdout
	fmt.Fprintf(out, "id     %s\n", r.ID)
	fmt.Fprintf(out, "due    %s, in %v\n", formatTime(r.At.UnixMilli()), r.At.Sub(sys.Now()).Round(time.Second))
	fmt.Fprintf(out, "topic  %s (via %s)\n", f.topic, r.Input)
	return nil
}

// atOrAfter checks that exactly one of --at and --after is given and
// reports whether it is --at.
func atOrAfter(cmd *cobra.Command) (atSet bool, err error) {
	atSet, afterSet := cmd.Flags().Changed("at"), cmd.Flags().Changed("after")
	switch {
	case atSet && afterSet:
		return false, usagef("--at and --after: give one, not both")
	case !atSet && !afterSet:
		return false, usagef("--at or --after is required")
	}
	return atSet, nil
}

// requireID: a replace names the task it replaces.
func requireID(cmd *cobra.Command, replace bool) error {
	if !replace {
		return nil
	}
	return require(cmd, "id")
}

// readValue takes the value from the argument, --file, or stdin, exactly
// one of them.
func readValue(sys *IO, args []string, file string) ([]byte, error) {
	switch {
	case len(args) == 1 && file != "":
		return nil, usagef("give the value as an argument or with --file, not both")
	case len(args) == 1:
		return []byte(args[0]), nil
	case file != "" && file != "-":
		f, err := os.Open(file)
		if err != nil {
			return nil, usagef("--file: %v", err)
		}
		defer f.Close()
		return readAll(f, "--file "+file)
	}
	if f, ok := sys.Stdin.(*os.File); ok && file == "" && term.IsTerminal(int(f.Fd())) {
		return nil, usagef("no value: give it as an argument, with --file, or on stdin")
	}
	return readAll(sys.Stdin, "stdin")
}

func readAll(r io.Reader, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxValue+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if len(b) > maxValue {
		return nil, usagef("%s: value over %d bytes", what, maxValue)
	}
	return b, nil
}
