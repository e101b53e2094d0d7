package consumer

import (
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func TestPartitionConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Partition
		wantErr bool
		check   func(t *testing.T, rc kafka.ReaderConfig)
	}{
		{"defaults", Partition{Topic: "t", Partition: 3}, false, func(t *testing.T, rc kafka.ReaderConfig) {
			if rc.Topic != "t" || rc.Partition != 3 || rc.GroupID != "" || rc.MinBytes != 1 || rc.MaxBytes != DefaultMaxBytes ||
				rc.MaxWait != DefaultMaxWait || len(rc.Brokers) != 1 || rc.Brokers[0] != "127.0.0.1:9092" || rc.Dialer == nil {
				t.Errorf("defaults: %+v", rc)
			}
		}},
		{"explicit", Partition{Brokers: []string{"b:1"}, Topic: "t", MaxBytes: 1 << 20, MaxWait: 250 * time.Millisecond}, false, func(t *testing.T, rc kafka.ReaderConfig) {
			if rc.Brokers[0] != "b:1" || rc.MaxBytes != 1<<20 || rc.MaxWait != 250*time.Millisecond {
				t.Errorf("explicit: %+v", rc)
			}
		}},
		{"no topic", Partition{}, true, nil},
		{"negative partition", Partition{Topic: "t", Partition: -1}, true, nil},
		{"negative max bytes", Partition{Topic: "t", MaxBytes: -1}, true, nil},
		{"negative max wait", Partition{Topic: "t", MaxWait: -time.Second}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, err := tt.cfg.Config()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Config() error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("error %v does not wrap ErrConfig", err)
				}
				return
			}
			tt.check(t, rc)
		})
	}
}

// Both readers of the preset start where they are told, without
// connecting, and refuse what Config refuses.
func TestPartitionReaders(t *testing.T) {
	r, err := NewPartitionReader(Partition{Brokers: []string{"127.0.0.1:1"}, Topic: "t", Partition: 1, Offset: 42})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Offset(); got != 42 {
		t.Errorf("partition reader at offset %d, want 42", got)
	}
	if _, err := NewPartitionReader(Partition{}); !errors.Is(err, ErrConfig) {
		t.Errorf("partition reader without topic: %v, want ErrConfig", err)
	}
	c, err := NewCommittedReader(Partition{Brokers: []string{"127.0.0.1:1"}, Topic: "t", Offset: kafka.FirstOffset})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := NewCommittedReader(Partition{MaxBytes: -1}); !errors.Is(err, ErrConfig) {
		t.Errorf("committed reader with bad config: %v, want ErrConfig", err)
	}
}
