package wiretest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Vectors is the file.
type Vectors struct {
	Version   int      `json:"version"`
	NowMS     int64    `json:"now_ms"`
	MaxDelay  string   `json:"max_delay"`
	SlowAfter string   `json:"slow_after"`
	Input     string   `json:"input"`
	Slow      string   `json:"slow"`
	Client    []Client `json:"client"`
	Decode    []Decode `json:"decode"`
}

// Client is a client call and the message it writes, or its refusal.
type Client struct {
	Name string `json:"name"`
	Op   string `json:"op"`
	Task struct {
		ID          string      `json:"id"`
		Topic       string      `json:"topic"`
		AtMS        int64       `json:"at_ms"`
		After       string      `json:"after"`
		Key         *string     `json:"key"`
		Value       *string     `json:"value"`
		Headers     [][2]string `json:"headers"`
		Every       string      `json:"every"`
		Cron        string      `json:"cron"`
		TZ          string      `json:"tz"`
		UntilMS     int64       `json:"until_ms"`
		Count       int         `json:"count"`
		ExpireAfter string      `json:"expire_after"`
	} `json:"task"`
	Want *struct {
		Topic   string      `json:"topic"`
		Key     *string     `json:"key"`
		Headers [][2]string `json:"headers"`
	} `json:"want"`
	Error string `json:"error"`
}

// Decode is a raw message and payload.Decode's verdict on it.
type Decode struct {
	Name     string      `json:"name"`
	Headers  [][2]string `json:"headers"`
	RecordMS int64       `json:"record_ms"`
	Key      *string     `json:"key"`
	Value    *string     `json:"value"`
	OK       bool        `json:"ok"`
	Want     struct {
		Op       string      `json:"op"`
		Topic    string      `json:"topic"`
		ExecAtMS int64       `json:"exec_at_ms"`
		ID       string      `json:"id"`
		PastDue  bool        `json:"past_due"`
		Headers  [][2]string `json:"headers"`
	} `json:"want"`
	Error string `json:"error"`
}

// Path is the file's path: testdata/wire/vectors.json at the module root.
func Path() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "testdata", "wire", "vectors.json")
}

// Load reads the file; it fails t unless it is version 1 with client and
// decode cases.
func Load(t testing.TB) Vectors {
	t.Helper()
	b, err := os.ReadFile(Path())
	if err != nil {
		t.Fatal(err)
	}
	var v Vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("testdata/wire/vectors.json: %v", err)
	}
	if v.Version != 1 || len(v.Client) == 0 || len(v.Decode) == 0 {
		t.Fatalf("testdata/wire/vectors.json: version %d, %d client and %d decode cases; want version 1 with some of each",
			v.Version, len(v.Client), len(v.Decode))
	}
	return v
}

// Duration reads a Go duration of a vector ("" is zero).
func Duration(t testing.TB, s string) time.Duration {
	t.Helper()
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// Bytes is a vector's key or value: nil when absent.
func Bytes(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}
