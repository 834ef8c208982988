package kafka

// HoldState reports, for the external tests, whether p's adaptive linger
// is holding records and how many it holds.
func HoldState(p *Producer) (on bool, held int) {
	if p.hold == nil {
		return false, 0
	}
	p.hold.mu.Lock()
	defer p.hold.mu.Unlock()
	return p.hold.on, len(p.hold.held)
}
