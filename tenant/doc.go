// Package tenant holds the pure rules of tenants (issue 39): a tenant is a
// named team sharing one delayq deployment, reaching only its own tasks,
// within its own quotas. This package is the first slice: the rules as
// functions of their inputs. Nothing in delayq calls it yet; there is no
// tenant registry, API, topic, token or ACL, and nothing is enforced.
//
// It is pure, in the manner of taskstate and scanner/schedule: it imports
// only the standard library (no Kafka, Redis or HBase client, no delayq
// package, no I/O), never reads the clock (now is an argument) and starts
// no goroutine (TestPure checks it).
//
// # Names and topics
//
// A tenant's name is 1 to 40 characters of [a-z0-9-] (Valid). The tenant
// Default ("default") is today's deployment: its topics are today's
// delay-input, delay-input-slow and delay-failed. Any other tenant t has
// delay-input.t, delay-input-slow.t and delay-failed.t (TopicsOf), so a
// Kafka ACL on those topics decides who submits as t and who reads its
// failures. Tenant names have no dot, so no tenant's topic is another's.
//
// # Rules
//
// Rules is the body of PUT /v1/tenants/{tenant}: the destination topics
// the tenant may write (names, and prefixes ending in "-"), the longest
// delay, and three quotas (pending tasks, submits a second, bytes a
// payload). Every field is optional; an absent or zero limit is no limit,
// and absent topics leave the deployment's --allow-topics alone. Decode
// refuses unknown fields; Validate reports every problem at once.
//
//   - MayWrite: whether the tenant may name topic T. Never one of delayq's
//     own topics (any tenant's) nor a Kafka internal one.
//   - CheckDelay: a delay over max_delay is refused.
//   - Admit: a request is admitted or refused with a reason that starts
//     "quota: " and names the quota and its limit. Payload bytes and
//     pending tasks are checked first; a submit over the rate takes no
//     token and a refused one takes none either (a token is taken only by
//     an admitted request). The token bucket (Bucket) is a function of now.
//
// # Ids
//
// ID maps a tenant's task name to its 63-bit storage id. The Default
// tenant keeps today's id (base, payload.TaskID) so nothing stored
// changes; any other tenant's id is the first 8 bytes of SHA-256 over a
// domain tag, the tenant and the name, top bit cleared: the same name in
// two tenants is two ids, and no tenant can make a name whose id is
// another tenant's without breaking SHA-256. Default's ids are not so
// protected: a decimal delay-id is its own id, so a producer of the
// Default tenant can address any id. The id is therefore not the whole
// boundary: the stored task must record its tenant, and an op by id
// reaches a task only if Owns(task's tenant, op's tenant) (see
// docs/tenants.md).
//
// # Fair release
//
// The rule that releases due tasks of several tenants in fair shares is
// scanner/schedule's Fair (schedule's rules take no tenant type).
package tenant
