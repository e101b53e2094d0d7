package payload

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cron "github.com/netresearch/go-cron"
)

// Headers of a recurring task (input, stored, output). Unlike the control
// headers they stay in Task.Headers: they travel with the row from one
// occurrence to the next and come out with every delivery.
const (
	HeaderEvery      = "delay-every"      // fixed interval, Go duration or seconds
	HeaderCron       = "delay-cron"       // five-field cron expression or @daily-style descriptor
	HeaderTZ         = "delay-tz"         // IANA time zone of delay-cron (default UTC)
	HeaderUntil      = "delay-until"      // no occurrence after this time (RFC 3339 or unix ms)
	HeaderCount      = "delay-count"      // at most this many occurrences
	HeaderOccurrence = "delay-occurrence" // 1-based number of this occurrence (set by delayq)
)

// MinEvery is the shortest delay-every accepted.
const MinEvery = time.Second

// MinEndlessEvery is the shortest delay-every of a series without
// delay-count or delay-until: an endless series at a shorter interval is
// refused, so that one message cannot make delayq deliver every second
// forever.
const MinEndlessEvery = time.Minute

// cronCheckPeriods is how many gaps between the times of a cron schedule
// Decode checks against MaxDelay, once per spec and zone (cronCache): a
// fixed number of periods bounds the time one check of a new spec takes,
// and four find the long gaps of the usual shapes (yearly, leap day, day
// 31, quarterly). The scanner checks every gap it plans (NextOccurrence).
const cronCheckPeriods = 4

// cronCacheSize bounds how many compiled schedules cronCache keeps.
const cronCacheSize = 4096

// cronParser reads standard five-field cron with @yearly-style descriptors.
// DowOrDom keeps the POSIX rule: when both day-of-month and day-of-week are
// restricted, a day matching either is due (the library's default is both).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow |
	cron.Descriptor | cron.DowOrDom)

// Recurrence is how a recurring task repeats: every Every, or on the cron
// schedule Cron in Loc; at most Count occurrences (0: no limit) and none
// after Until (unix ms, 0: no limit).
type Recurrence struct {
	Every time.Duration
	Cron  string
	Loc   *time.Location // of Cron
	Until int64
	Count int64

	sched cron.Schedule
	// gap is the largest gap (ms) between the first cronCheckPeriods + 1
	// times of sched, and gapFrom the time it starts (cronCache).
	gap, gapFrom int64
}

// Next returns the due time of the occurrence after the one numbered occ
// (1-based) and due at execAt, and false when the series ends there (Count
// reached, past Until, or a cron schedule with no further time). It is a
// pure function of its arguments: planning the same occurrence again (a
// crash, a replayed scan) yields the same next occurrence, one task.
//
// An occurrence numbered math.MaxInt64 is the last: the next could not be
// numbered.
func (r Recurrence) Next(execAt, occ int64) (int64, bool) {
	if r.Count > 0 && occ >= r.Count || occ == math.MaxInt64 {
		return 0, false
	}
	var next int64
	switch {
	case r.Every > 0:
		next = execAt + r.Every.Milliseconds()
	case r.sched != nil:
		var ok bool
		if next, ok = cronNext(r.sched, r.Loc, execAt); !ok {
			return 0, false
		}
	default:
		return 0, false
	}
	if next <= execAt || r.Until > 0 && next > r.Until {
		return 0, false
	}
	return next, true
}

// cronNext returns the first time of sched in loc after execAt, and false
// when there is none.
func cronNext(sched cron.Schedule, loc *time.Location, execAt int64) (int64, bool) {
	cur := time.UnixMilli(execAt).In(loc)
	t := sched.Next(cur)
	// When clocks fall back the library finds the repeated wall time
	// again (01:30 EDT, then 01:30 EST): skip times whose wall clock
	// is not after the current one's, so each wall time runs once.
	for i := 0; i < 1000 && !t.IsZero() && !wall(t).After(wall(cur)); i++ {
		t = sched.Next(t)
	}
	if t.IsZero() || !wall(t).After(wall(cur)) {
		return 0, false
	}
	return t.UnixMilli(), true
}

// wall is t's wall clock reading as a UTC time, for comparing wall times
// across a change of UTC offset.
func wall(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	return time.Date(y, mo, d, h, mi, sec, t.Nanosecond(), time.UTC)
}

// Series reads the recurrence and the occurrence number of a stored task
// from its headers; ok is false when the task does not recur. An error
// means the stored headers are not what Decode writes (a time zone this
// host does not know, for one).
func Series(t Task) (r Recurrence, occ int64, ok bool, err error) {
	var every, spec, tz, until, count, occurrence []byte
	for _, h := range t.Headers {
		switch h.Key {
		case HeaderEvery:
			every = h.Value
		case HeaderCron:
			spec = h.Value
		case HeaderTZ:
			tz = h.Value
		case HeaderUntil:
			until = h.Value
		case HeaderCount:
			count = h.Value
		case HeaderOccurrence:
			occurrence = h.Value
		}
	}
	if every == nil && spec == nil {
		return Recurrence{}, 0, false, nil
	}
	r, err = parseRecurrence(every, spec, tz, until, count, t.ExecAt)
	if err != nil {
		return Recurrence{}, 0, false, err
	}
	occ = 1
	if occurrence != nil {
		if occ, err = parseOccurrence(occurrence); err != nil {
			return Recurrence{}, 0, false, err
		}
	}
	return r, occ, true, nil
}

// NextOccurrence returns the task of the occurrence after t: same id, name,
// topic, key, value and headers, due at the next time, with delay-occurrence
// one higher; ok is false when t does not recur or its series ends with it.
// maxGap (> 0) bounds how far after t the next occurrence may fall (the
// maximum delay); a larger gap ends the series with an error.
func NextOccurrence(t Task, maxGap time.Duration) (next Task, ok bool, err error) {
	r, occ, ok, err := Series(t)
	if err != nil || !ok {
		return Task{}, false, err
	}
	at, ok := r.Next(t.ExecAt, occ)
	if !ok {
		return Task{}, false, nil
	}
	if maxGap > 0 && at-t.ExecAt > maxGap.Milliseconds() {
		return Task{}, false, fmt.Errorf("payload: occurrence %d of %q due %s, more than the maximum delay %v after the one before",
			occ+1, t.Name, FormatTime(at), maxGap)
	}
	next = t.clone()
	next.ExecAt = at
	next.Cancel, next.PastDue = false, false
	next.Headers = withOccurrence(next.Headers, occ+1)
	return next, true, nil
}

// withOccurrence sets delay-occurrence in hs to occ.
func withOccurrence(hs []Header, occ int64) []Header {
	v := []byte(strconv.FormatInt(occ, 10))
	for i := range hs {
		if hs[i].Key == HeaderOccurrence {
			hs[i].Value = v
			return hs
		}
	}
	return append(hs, Header{Key: HeaderOccurrence, Value: v})
}

// recurIndex tells whether key is a recurrence header Decode reads, and
// which slot of its table.
func recurIndex(key string) int {
	switch key {
	case HeaderEvery:
		return recEvery
	case HeaderCron:
		return recCron
	case HeaderTZ:
		return recTZ
	case HeaderUntil:
		return recUntil
	case HeaderCount:
		return recCount
	case HeaderOccurrence:
		return recOccurrence
	}
	return -1
}

const (
	recEvery = iota
	recCron
	recTZ
	recUntil
	recCount
	recOccurrence
	numRecur
)

// decodeRecurrence checks the recurrence headers of an input task due at
// execAt (none, or a complete series) and returns them as stored: in a
// fixed order, delay-occurrence set (1 unless given).
func decodeRecurrence(rec [numRecur]*Header, execAt int64, maxDelay time.Duration) ([]Header, error) {
	val := func(i int) []byte {
		if rec[i] == nil {
			return nil
		}
		if rec[i].Value == nil {
			return []byte{}
		}
		return rec[i].Value
	}
	every, spec := val(recEvery), val(recCron)
	if every == nil && spec == nil {
		for _, i := range []int{recTZ, recUntil, recCount, recOccurrence} {
			if rec[i] != nil {
				return nil, violation("%s: only with %s or %s", rec[i].Key, HeaderEvery, HeaderCron)
			}
		}
		return nil, nil
	}
	if until := val(recUntil); until != nil {
		// The input's rule (ParseDueTime); Series reads stored ones as
		// they were accepted.
		if _, err := ParseDueTime(HeaderUntil, string(until)); err != nil {
			return nil, err
		}
	}
	r, err := parseRecurrence(every, spec, val(recTZ), val(recUntil), val(recCount), execAt)
	if err != nil {
		return nil, err
	}
	occ := int64(1)
	if v := val(recOccurrence); v != nil {
		if occ, err = parseOccurrence(v); err != nil {
			return nil, err
		}
	}
	switch {
	case r.Count > 0 && occ > r.Count:
		return nil, violation("%s: %d is past %s %d", HeaderOccurrence, occ, HeaderCount, r.Count)
	case r.Until > 0 && r.Until < execAt:
		return nil, violation("%s: %s is before the first occurrence (%s)", HeaderUntil, FormatTime(r.Until), FormatTime(execAt))
	case r.Every > maxDelay:
		return nil, violation("%s: %v is over the maximum delay %v", HeaderEvery, r.Every, maxDelay)
	case r.Every > 0 && r.Every < MinEndlessEvery && r.Count == 0 && r.Until == 0:
		return nil, violation("%s: %v without %s or %s: an endless series runs at most every %v", HeaderEvery,
			r.Every, HeaderCount, HeaderUntil, MinEndlessEvery)
	}
	// A gap of the schedule over the maximum delay, unless the series ends
	// before it can meet one: no occurrence after this one, or delay-until
	// within the maximum delay.
	ends := r.Count > 0 && occ >= r.Count || r.Until > 0 && r.Until-execAt <= maxDelay.Milliseconds()
	if r.sched != nil && !ends && r.gap > maxDelay.Milliseconds() {
		return nil, violation("%s: %s falls %v after %s, over the maximum delay %v", HeaderCron,
			FormatTime(r.gapFrom+r.gap), time.Duration(r.gap)*time.Millisecond, FormatTime(r.gapFrom), maxDelay)
	}
	var hs []Header
	for i := range recOccurrence {
		if h := rec[i]; h != nil {
			hs = append(hs, Header{Key: h.Key, Value: slices.Clone(val(i))})
		}
	}
	return append(hs, Header{Key: HeaderOccurrence, Value: []byte(strconv.FormatInt(occ, 10))}), nil
}

// parseRecurrence reads the recurrence headers of a task due at execAt;
// nil means absent. Errors wrap ErrContract.
func parseRecurrence(every, spec, tz, until, count []byte, execAt int64) (Recurrence, error) {
	var r Recurrence
	switch {
	case every != nil && spec != nil:
		return r, violation("%s and %s: give one, not both", HeaderEvery, HeaderCron)
	case every != nil:
		if tz != nil {
			return r, violation("%s: only with %s", HeaderTZ, HeaderCron)
		}
		d, err := parseInterval(every)
		if err != nil {
			return r, err
		}
		r.Every = d
	case spec != nil:
		s := strings.TrimSpace(string(spec))
		switch {
		case s == "":
			return r, violation("%s: empty", HeaderCron)
		case strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ="):
			return r, violation("%s: %s: give the time zone in %s", HeaderCron, quote(spec), HeaderTZ)
		case strings.HasPrefix(s, "@every"):
			return r, violation("%s: %s: use %s for a fixed interval", HeaderCron, quote(spec), HeaderEvery)
		}
		c, err := compileCron(s, spec, tz, execAt)
		if err != nil {
			return r, err
		}
		r.Cron, r.Loc, r.sched, r.gap, r.gapFrom = s, c.loc, c.sched, c.gap, c.gapFrom
	}
	if until != nil {
		ms, err := parseTime(HeaderUntil, until)
		if err != nil {
			return r, err
		}
		r.Until = ms
	}
	if count != nil {
		n, err := strconv.ParseInt(string(count), 10, 64)
		if err != nil || n < 1 {
			return r, violation("%s: %s is not a whole number >= 1", HeaderCount, quote(count))
		}
		r.Count = n
	}
	return r, nil
}

// compiledCron is a cron schedule in its zone, with the largest gap among
// its first cronCheckPeriods periods.
type compiledCron struct {
	sched        cron.Schedule
	loc          *time.Location
	gap, gapFrom int64
}

// cronCache keeps compiled schedules by spec and zone: parsing a spec,
// loading a zone and walking the periods cost far more than a message
// should. At most cronCacheSize entries; a full cache forgets one at
// random.
var cronCache = struct {
	sync.Mutex
	m map[[2]string]*compiledCron
}{m: make(map[[2]string]*compiledCron)}

// compileCron returns the schedule s (the trimmed spec) in the zone tz (nil:
// UTC), from cronCache or compiled now, its periods walked from the first
// time after from.
func compileCron(s string, spec, tz []byte, from int64) (*compiledCron, error) {
	key := [2]string{s, string(tz)}
	cronCache.Lock()
	c := cronCache.m[key]
	cronCache.Unlock()
	if c != nil {
		return c, nil
	}
	c = &compiledCron{loc: time.UTC}
	if tz != nil {
		name := string(tz)
		if name == "" || name == "Local" {
			return nil, violation("%s: %s is not an IANA time zone name", HeaderTZ, quote(tz))
		}
		loc, err := loadLocation(name)
		if err != nil {
			return nil, violation("%s: %s is not a known IANA time zone", HeaderTZ, quote(tz))
		}
		c.loc = loc
	}
	sched, err := cronParser.Parse(s)
	if err != nil {
		return nil, violation("%s: %s is not a cron expression (minute hour day-of-month month day-of-week, or @daily...): %v",
			HeaderCron, quote(spec), err)
	}
	c.sched = sched
	at, ok := cronNext(sched, c.loc, from)
	for range cronCheckPeriods {
		if !ok {
			break
		}
		next, more := cronNext(sched, c.loc, at)
		if more && next-at > c.gap {
			c.gap, c.gapFrom = next-at, at
		}
		at, ok = next, more
	}
	cronCache.Lock()
	if len(cronCache.m) >= cronCacheSize {
		for k := range cronCache.m {
			delete(cronCache.m, k)
			break
		}
	}
	cronCache.m[key] = c
	cronCache.Unlock()
	return c, nil
}

// zones keeps the time zones loaded so far by name: time.LoadLocation
// reads the zone's file every time. Only zones that load are kept, so it
// holds at most the names of the zone database.
var zones sync.Map // name -> *time.Location

func loadLocation(name string) (*time.Location, error) {
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}

// parseInterval reads delay-every: a Go duration or seconds, at least
// MinEvery.
func parseInterval(v []byte) (time.Duration, error) {
	d, err := ParseDelay(HeaderEvery, string(v))
	if err != nil {
		return 0, violation("%s: %s is not a Go duration or seconds (90s, 1h30m, 2d or 90) above zero", HeaderEvery, quote(v))
	}
	if d < MinEvery {
		return 0, violation("%s: %s is under the minimum %v", HeaderEvery, quote(v), MinEvery)
	}
	return d, nil
}

func parseOccurrence(v []byte) (int64, error) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 1 {
		return 0, violation("%s: %s is not a whole number >= 1", HeaderOccurrence, quote(v))
	}
	return n, nil
}

// parseTime reads a time header: unix ms or RFC 3339, after the epoch.
func parseTime(name string, v []byte) (int64, error) {
	s := string(v)
	var ms int64
	if s != "" && isDigits(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, violation("%s: %s is out of range for unix ms", name, quote(v))
		}
		ms = n
	} else {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, violation("%s: %s is not RFC 3339 or unix ms", name, quote(v))
		}
		ms = t.UnixMilli()
	}
	if ms <= 0 {
		return 0, violation("%s: %s is at or before the unix epoch", name, quote(v))
	}
	return ms, nil
}

// CheckRecurrence applies Decode's recurrence rules to the headers of a
// task first due at first (unix ms), for producers that check before they
// send (the Go client); maxDelay 0 bounds no gap. It returns nil when hs
// holds no recurrence header. Errors wrap ErrContract and read as
// delay-failed's reason would.
func CheckRecurrence(hs []Header, first int64, maxDelay time.Duration) error {
	var rec [numRecur]*Header
	for i := range hs {
		r := recurIndex(hs[i].Key)
		if r < 0 {
			continue
		}
		if rec[r] != nil {
			return violation("%s: header given more than once", hs[i].Key)
		}
		rec[r] = &hs[i]
	}
	if maxDelay <= 0 {
		maxDelay = math.MaxInt64
	}
	_, err := decodeRecurrence(rec, first, maxDelay)
	return err
}
