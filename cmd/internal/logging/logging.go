package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
)

// Formats of --log-format.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// New returns a logger writing to w at level in format: FormatText,
// FormatJSON, or "" for text when terminal is true and JSON otherwise.
func New(w io.Writer, format, level string, terminal bool) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	if format == "" {
		format = FormatJSON
		if terminal {
			format = FormatText
		}
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch format {
	case FormatText:
		h = slog.NewTextHandler(w, opts)
	case FormatJSON:
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
	return slog.New(&unique{base: h}), nil
}

// unique is a handler that writes each top-level key once: attributes
// added by With accumulate here, a later one replacing an earlier one of
// the same key, and a record's own attributes replace both.
type unique struct {
	base  slog.Handler // without the attrs below
	attrs []slog.Attr
}

func (h *unique) Enabled(ctx context.Context, l slog.Level) bool { return h.base.Enabled(ctx, l) }

func (h *unique) WithAttrs(as []slog.Attr) slog.Handler {
	return &unique{base: h.base, attrs: merge(slices.Clone(h.attrs), as)}
}

// WithGroup hands the attributes so far to the base handler: keys inside a
// group are the group's, not the line's.
func (h *unique) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &unique{base: h.base.WithAttrs(h.attrs).WithGroup(name)}
}

func (h *unique) Handle(ctx context.Context, r slog.Record) error {
	own := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool { own = append(own, a); return true })
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(merge(slices.Clone(h.attrs), own)...)
	return h.base.Handle(ctx, out)
}

// merge appends as to attrs; a key already there keeps its place and takes
// the new value. Empty keys (slog drops them) and groups inlined with an
// empty key are kept as they are.
func merge(attrs, as []slog.Attr) []slog.Attr {
	for _, a := range as {
		i := -1
		if a.Key != "" {
			i = slices.IndexFunc(attrs, func(b slog.Attr) bool { return b.Key == a.Key })
		}
		if i >= 0 {
			attrs[i] = a
		} else {
			attrs = append(attrs, a)
		}
	}
	return attrs
}
