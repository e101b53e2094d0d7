package ingest

import "testing"

// TestStoredAhead: a new generation starts after a stored batch only when
// that is past the committed offset, and only once.
func TestStoredAhead(t *testing.T) {
	var s storedAhead
	if got := s.start("in", 0, 10); got != 10 {
		t.Fatalf("nothing stored: start %d, want the committed 10", got)
	}
	s.set("in", 0, 40)
	s.set("in", 0, 30) // an older batch's commit failing later
	s.set("in", 1, 5)
	if got := s.start("in", 0, 10); got != 40 {
		t.Fatalf("stored up to 40: start %d, want 40", got)
	}
	if got := s.start("in", 0, 10); got != 10 {
		t.Fatalf("start twice: %d, want the committed 10 (forgotten after use)", got)
	}
	if got := s.start("in", 1, 7); got != 7 {
		t.Fatalf("another owner committed past the stored batch: start %d, want 7", got)
	}
	if got := s.start("in", 2, -2); got != -2 {
		t.Fatalf("no committed offset, nothing stored: start %d, want -2 (kafka.FirstOffset)", got)
	}
}
