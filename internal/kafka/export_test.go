package kafka

// LingerState reports, for the external tests, whether p's adaptive linger
// is holding records and how many it holds.
func LingerState(p *Producer) (on bool, held int) {
	if p.linger == nil {
		return false, 0
	}
	return p.linger.State()
}
