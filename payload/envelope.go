package payload

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// EnvelopeV1 is the first byte of a version-1 envelope.
const EnvelopeV1 byte = 1

// ErrEnvelope is wrapped by every DecodeEnvelope error.
var ErrEnvelope = errors.New("payload: invalid envelope")

// AppendEnvelope appends the stored fields of t (topic, name, key, headers,
// value) to b as one versioned envelope and returns the extended slice.
// Version 1 is
//
//	0x01
//	uvarint(len(topic)) topic
//	uvarint(len(name)) name
//	uvarint(len(key)+1) key            0 for a nil key
//	uvarint(count of headers)
//	  per header: uvarint(len(k)) k uvarint(len(v)+1) v   0 for a nil v
//	uvarint(len(value)+1) value        0 for a nil value
//
// ID, ExecAt (in the rowkey), Cancel (its own cell) and Control are not
// part of it.
func AppendEnvelope(b []byte, t *Task) []byte {
	b = append(b, EnvelopeV1)
	b = appendString(b, t.Topic)
	b = appendString(b, t.Name)
	b = appendNullable(b, t.Key)
	b = binary.AppendUvarint(b, uint64(len(t.Headers)))
	for _, h := range t.Headers {
		b = appendString(b, h.Key)
		b = appendNullable(b, h.Value)
	}
	return appendNullable(b, t.Value)
}

// EnvelopeLen is the exact length AppendEnvelope adds for t.
func EnvelopeLen(t *Task) int {
	n := 1 + stringLen(t.Topic) + stringLen(t.Name) + nullableLen(t.Key) +
		uvarintLen(uint64(len(t.Headers))) + nullableLen(t.Value)
	for _, h := range t.Headers {
		n += stringLen(h.Key) + nullableLen(h.Value)
	}
	return n
}

// EncodeEnvelope returns the envelope of t in a buffer of the exact size.
func EncodeEnvelope(t *Task) []byte {
	return AppendEnvelope(make([]byte, 0, EnvelopeLen(t)), t)
}

// DecodeEnvelope sets t's Topic, Name, Key, Headers and Value from the
// envelope b, leaving the other fields alone. Key, Value and header values
// alias b (nil stays nil; no headers is a nil slice). Any error wraps
// ErrEnvelope: an unknown version, a truncated field or trailing bytes; t is
// then unchanged.
func DecodeEnvelope(b []byte, t *Task) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty", ErrEnvelope)
	}
	if b[0] != EnvelopeV1 {
		return fmt.Errorf("%w: unknown version %d", ErrEnvelope, b[0])
	}
	d := envDecoder{b: b[1:]}
	topic := d.string()
	name := d.string()
	key := d.nullable()
	count := d.uvarint()
	var hs []Header
	if d.err == nil && count > 0 {
		if count > uint64(len(d.b))/2 { // every header takes >= 2 bytes
			return fmt.Errorf("%w: %d headers in %d bytes", ErrEnvelope, count, len(d.b))
		}
		hs = make([]Header, count)
		for i := range hs {
			hs[i] = Header{Key: d.string(), Value: d.nullable()}
		}
	}
	value := d.nullable()
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrEnvelope, len(d.b))
	}
	t.Topic, t.Name, t.Key, t.Headers, t.Value = topic, name, key, hs, value
	return nil
}

type envDecoder struct {
	b   []byte
	err error
}

func (d *envDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad length", ErrEnvelope)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *envDecoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: field of %d bytes, %d left", ErrEnvelope, n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *envDecoder) string() string { return string(d.bytes(d.uvarint())) }

func (d *envDecoder) nullable() []byte {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	return d.bytes(n - 1)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendNullable(b, v []byte) []byte {
	if v == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(v))+1)
	return append(b, v...)
}

func stringLen(s string) int   { return uvarintLen(uint64(len(s))) + len(s) }
func nullableLen(v []byte) int { return uvarintLen(uint64(len(v))+1) + len(v) }

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
