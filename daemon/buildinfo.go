package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/version"
)

// buildInfo is the gauge delayq_build_info{version,revision,goversion} = 1:
// which build runs, for dashboards and for alerts on mixed versions.
func buildInfo() prometheus.Collector {
	info := version.Get()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "delayq_build_info",
		Help: "Always 1; the labels say which delayq build runs: version, VCS revision, Go version.",
	}, []string{"version", "revision", "goversion"})
	g.WithLabelValues(info.Version, info.Revision, info.GoVersion).Set(1)
	return g
}
