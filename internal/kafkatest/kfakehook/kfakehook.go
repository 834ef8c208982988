// Package kfakehook hands the kfake cluster behind an *embedded.Broker to
// weir's test helpers without putting kfake in embedded's exported API.
//
// embedded is public; kfake is a pseudo-versioned dependency whose API
// changes, and fault injection is a testing concern. So embedded exports no
// accessor: its init registers a function here, and kafkatest.Cluster (an
// internal package, free to expose kfake) calls it. Nothing outside this
// module can import this package.
//
// Usage (tests only, through kafkatest):
//
//	env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic})
//
// The registered function is set once, at init, and read afterwards: safe
// for concurrent use.
package kfakehook

import (
	"sync/atomic"

	"github.com/weirstream/weir/internal/third_party/kfake"
)

var clusterOf atomic.Pointer[func(broker any) *kfake.Cluster]

// Register installs the function that unwraps a broker; package embedded
// calls it from init.
func Register(f func(broker any) *kfake.Cluster) { clusterOf.Store(&f) }

// Cluster returns the kfake cluster behind broker (an *embedded.Broker), or
// nil if broker is anything else or embedded is not linked in.
func Cluster(broker any) *kfake.Cluster {
	f := clusterOf.Load()
	if f == nil {
		return nil
	}
	return (*f)(broker)
}
