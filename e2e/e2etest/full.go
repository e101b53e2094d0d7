package e2etest

import "os"

// FullEnv is the variable that asks the fault packages for their
// soak-length variants: `make faults` sets it; `make test` leaves it unset
// and runs each fault in its shortest honest form (the same assertions on
// fewer repetitions and shorter outages; each package doc gives both).
const FullEnv = "DELAYQ_FAULTS_FULL"

// Full reports whether FullEnv is 1.
func Full() bool { return os.Getenv(FullEnv) == "1" }

// Pick returns full under Full and short otherwise.
func Pick[T any](short, full T) T {
	if Full() {
		return full
	}
	return short
}
