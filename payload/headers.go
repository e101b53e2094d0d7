package payload

import (
	"encoding/binary"
	"errors"
)

var errHeaders = errors.New("truncated or malformed header block")

// EncodeHeaders writes the d:h column: uvarint(count), then per header
// uvarint(len(key)) key uvarint(len(value)+1) value, 0 for a nil value.
func EncodeHeaders(hs []Header) []byte {
	n := binary.MaxVarintLen64
	for _, h := range hs {
		n += 2*binary.MaxVarintLen64 + len(h.Key) + len(h.Value)
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(hs)))
	for _, h := range hs {
		b = binary.AppendUvarint(b, uint64(len(h.Key)))
		b = append(b, h.Key...)
		if h.Value == nil {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(h.Value))+1)
		b = append(b, h.Value...)
	}
	return b
}

// DecodeHeaders reads the d:h column; values are copies.
func DecodeHeaders(b []byte) ([]Header, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) { // every header takes >= 2 bytes
		return nil, errHeaders
	}
	b = b[n:]
	hs := make([]Header, 0, count)
	for range count {
		kl, n := binary.Uvarint(b)
		if n <= 0 || kl > uint64(len(b)-n) {
			return nil, errHeaders
		}
		key := string(b[n : n+int(kl)])
		b = b[n+int(kl):]
		vl, n := binary.Uvarint(b)
		if n <= 0 || (vl > 0 && vl-1 > uint64(len(b)-n)) {
			return nil, errHeaders
		}
		b = b[n:]
		var val []byte
		if vl > 0 {
			val = append([]byte{}, b[:vl-1]...)
			b = b[vl-1:]
		}
		hs = append(hs, Header{Key: key, Value: val})
	}
	if len(b) != 0 {
		return nil, errHeaders
	}
	if len(hs) == 0 {
		return nil, nil
	}
	return hs, nil
}
