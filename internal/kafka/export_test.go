package kafka

import "time"

// LingerState reports, for the external tests, whether p's adaptive linger
// is holding records and how many it holds.
func LingerState(p *Producer) (on bool, held int) {
	sp, ok := p.impl.(*saramaProducer)
	if !ok || sp.linger == nil {
		return false, 0
	}
	return sp.linger.State()
}

// SetDeliveryTimeout sets the franz-go producer's delivery timeout for the
// producers created until the returned function restores it.
func SetDeliveryTimeout(d time.Duration) (restore func()) {
	old := deliveryTimeout
	deliveryTimeout = d
	return func() { deliveryTimeout = old }
}
