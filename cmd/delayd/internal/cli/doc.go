// Package cli is delayd's command line: its flags (NewFlagSet, each also
// read from its DELAYQ_* variable through cmd/internal/envflag), the
// grouped --help, the one-line errors and exit codes of Main, and the run
// of the daemon or of embedded mode with its banner.
//
// # Invariants
//
// Flag and variable names are delayq's interface: never renamed. Every
// flag is in exactly one group of the help. A refused flag or variable is
// one line on stderr and exit code 2, before anything starts; in embedded
// mode the tokens are checked and the --http and --api ports bound before
// the banner prints.
package cli
