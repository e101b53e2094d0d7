package payload

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// RowKeyLen is the length of every rowkey: salt, exec_at, id.
const RowKeyLen = 17

// MaxSalts is the largest salt count a one-byte salt allows.
const MaxSalts = 256

// ErrRowKey is wrapped by ParseRowKey errors.
var ErrRowKey = errors.New("payload: malformed rowkey")

// FNV-1a 64-bit constants (the salt hash is part of the stored data: never
// change it).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// RowKey builds the 17-byte rowkey of r for a table with salts regions:
// salt | exec_at (8 bytes BE unix ms) | id (8 bytes BE). See the package doc
// for the salt. It panics unless 1 <= salts <= 256.
func RowKey(salts int, r Ref) []byte {
	return AppendRowKey(make([]byte, 0, RowKeyLen), salts, r)
}

// AppendRowKey appends the rowkey of r to dst.
func AppendRowKey(dst []byte, salts int, r Ref) []byte {
	checkSalts(salts)
	n := len(dst)
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.ExecAt))
	dst = binary.BigEndian.AppendUint64(dst, r.ID)
	dst[n] = byte(saltOf(dst[n+1:n+RowKeyLen]) % uint64(salts))
	return dst
}

func saltOf(b []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

func checkSalts(salts int) {
	if salts < 1 || salts > MaxSalts {
		panic(fmt.Sprintf("payload: salts %d out of range 1..%d", salts, MaxSalts))
	}
}

// ParseRowKey returns the Ref a rowkey was built from. The salt byte is not
// checked (it depends on the table's salt count).
func ParseRowKey(key []byte) (Ref, error) {
	if len(key) != RowKeyLen {
		return Ref{}, fmt.Errorf("%w: %d bytes, want %d", ErrRowKey, len(key), RowKeyLen)
	}
	r := Ref{
		ExecAt: int64(binary.BigEndian.Uint64(key[1:9])),
		ID:     binary.BigEndian.Uint64(key[9:17]),
	}
	if r.ExecAt < 0 {
		return Ref{}, fmt.Errorf("%w: negative exec_at", ErrRowKey)
	}
	return r, nil
}

// SplitKeys returns the salts-1 split keys that pre-split a table into one
// region per salt: {0x01}, {0x02}, ..., {salts-1}. It panics unless
// 1 <= salts <= 256.
func SplitKeys(salts int) [][]byte {
	checkSalts(salts)
	keys := make([][]byte, 0, salts-1)
	for s := 1; s < salts; s++ {
		keys = append(keys, []byte{byte(s)})
	}
	return keys
}

// ScanRange returns the [start, stop) rows of salt s holding
// from <= exec_at < to.
func ScanRange(s byte, from, to int64) (start, stop []byte) {
	start = make([]byte, RowKeyLen)
	stop = make([]byte, RowKeyLen)
	start[0], stop[0] = s, s
	binary.BigEndian.PutUint64(start[1:9], uint64(from))
	binary.BigEndian.PutUint64(stop[1:9], uint64(to))
	return start, stop
}
