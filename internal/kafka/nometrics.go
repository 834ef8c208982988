package kafka

import (
	"reflect"

	"github.com/rcrowley/go-metrics"
)

// nilRegistry is the go-metrics registry of every sarama client weir
// creates: it registers nothing and hands out go-metrics' no-op metrics,
// so sarama's meters and histograms (updated on every request, response
// and fetched batch) cost nothing. go-metrics' own switch,
// metrics.UseNilMetrics, is process-wide and would turn off the metrics of
// the user's other sarama clients too.
type nilRegistry struct{}

var _ metrics.Registry = nilRegistry{}

func (nilRegistry) Each(func(string, any))            {}
func (nilRegistry) Get(string) any                    { return nil }
func (nilRegistry) GetAll() map[string]map[string]any { return nil }
func (nilRegistry) Register(string, any) error        { return nil }
func (nilRegistry) RunHealthchecks()                  {}
func (nilRegistry) Unregister(string)                 {}
func (nilRegistry) UnregisterAll()                    {}

// GetOrRegister returns the no-op metric of the kind metric is, or makes:
// sarama passes a constructor (metrics.NewMeter, a func returning a
// Histogram, ...) and type-asserts the result to that kind.
func (nilRegistry) GetOrRegister(_ string, metric any) any {
	switch metric.(type) {
	case func() metrics.Meter, metrics.Meter:
		return metrics.NilMeter{}
	case func() metrics.Histogram, metrics.Histogram:
		return metrics.NilHistogram{}
	case func() metrics.Counter, metrics.Counter:
		return metrics.NilCounter{}
	case func() metrics.Gauge, metrics.Gauge:
		return metrics.NilGauge{}
	case func() metrics.GaugeFloat64, metrics.GaugeFloat64:
		return metrics.NilGaugeFloat64{}
	case func() metrics.Timer, metrics.Timer:
		return metrics.NilTimer{}
	case func() metrics.EWMA, metrics.EWMA:
		return metrics.NilEWMA{}
	}
	// Another constructor: make the metric (unregistered, so nothing
	// ticks it); a metric value is returned as it is.
	if v := reflect.ValueOf(metric); v.Kind() == reflect.Func && v.Type().NumIn() == 0 && v.Type().NumOut() == 1 {
		return v.Call(nil)[0].Interface()
	}
	return metric
}
