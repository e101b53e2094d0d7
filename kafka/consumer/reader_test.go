package consumer

import (
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/topics"
)

func TestReaderConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ReaderConfig
		wantErr bool
		check   func(t *testing.T, rc kafka.ReaderConfig)
	}{
		{"defaults", ReaderConfig{GroupID: "g", Topics: []string{"t"}}, false, func(t *testing.T, rc kafka.ReaderConfig) {
			if rc.Topic != "t" || rc.GroupTopics != nil || rc.MinBytes != 1 || rc.MaxBytes != 10<<20 ||
				rc.MaxWait != 500*time.Millisecond || rc.CommitInterval != 0 || rc.StartOffset != kafka.FirstOffset ||
				rc.Brokers[0] != "127.0.0.1:9092" {
				t.Errorf("defaults: %+v", rc)
			}
		}},
		{"two topics", ReaderConfig{GroupID: "g", Topics: []string{topics.Input, topics.Slow}, CommitInterval: time.Second}, false, func(t *testing.T, rc kafka.ReaderConfig) {
			if rc.Topic != "" || len(rc.GroupTopics) != 2 || rc.CommitInterval != time.Second {
				t.Errorf("two topics: %+v", rc)
			}
		}},
		{"no group", ReaderConfig{Topics: []string{"t"}}, true, nil},
		{"no topics", ReaderConfig{GroupID: "g"}, true, nil},
		{"min above max", ReaderConfig{GroupID: "g", Topics: []string{"t"}, MinBytes: 10, MaxBytes: 5}, true, nil},
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
