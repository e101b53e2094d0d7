package tenant

import (
	"crypto/sha256"
	"encoding/binary"
)

// maxID is payload.MaxID: ids are 63-bit.
const maxID = 1<<63 - 1

// idDomain tags the hash input of a tenant's id, so that no other hash of
// delayq's is computed over the same bytes.
const idDomain = "delayq tenant id v1\x00"

// ID maps the task name of a tenant to its 63-bit storage id (the id of
// its HBase rowkey, its id row and its Redis zset member). For Default it
// is base(name), today's id (payload.TaskID): nothing stored changes. For
// any other tenant it is the first 8 bytes (big-endian) of
// SHA-256(idDomain | tenant | 0x00 | name), top bit cleared. The tenant
// name has no 0x00, so (tenant, name) pairs never share a hash input.
func ID(tenant, name string, base func(string) uint64) uint64 {
	if tenant == Default {
		return base(name)
	}
	h := sha256.New()
	h.Write([]byte(idDomain))
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return binary.BigEndian.Uint64(h.Sum(nil)[:8]) & maxID
}

// Owns reports whether an op by id of tenant caller reaches a stored task
// of tenant owner: only its own. Ids alone do not separate Default from
// the others (a decimal delay-id of Default is its own id, any id), so
// the stored task records its tenant and every op by id checks it.
func Owns(owner, caller string) bool { return owner == caller }
