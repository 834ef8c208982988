package kafka

// HoldState reports, for the external tests, whether p's adaptive linger
// is holding records and how many it holds.
func HoldState(p *Producer) (on bool, held int) {
	if p.hold == nil {
		return false, 0
	}
	return p.hold.State()
}
