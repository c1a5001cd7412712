package worker

import "sync"

// flights are the attempts this worker is performing, by occurrence id, so
// that a second delivery of one of them (JetStream redelivered it into this
// worker's own pull while the first copy was in flight) is not performed
// again.
//
// Such a copy is neither performed nor handed back. When it is the same
// stream message, the first delivery's Ack settles it: nats-server keys an
// explicitly acknowledged consumer's pending messages by stream sequence
// and, on an Ack, deletes the stream sequence's entry whichever delivery
// the Ack came from (consumer.go, processAckMsg). A Nak is keyed the same
// way (processNak), which is why a copy is never handed back: that would
// have the message delivered again while the first copy runs. When it is
// another stream message of the same attempt (the attempt was published
// twice), it is acknowledged once the first copy's result is stored, and
// otherwise left to be delivered again after its ack wait.
type flights struct {
	mu   sync.Mutex
	byID map[string]*flight
}

// flight is one attempt in flight.
type flight struct {
	seq    uint64    // the stream sequence of the delivery performed
	copies []message // deliveries of other stream messages of the attempt
}

// enter registers the attempt id delivered by m and reports whether it is
// the first: false means it is in flight already, and m was remembered if
// it is another stream message.
func (fs *flights) enter(id string, m message) (*flight, bool) {
	seq := streamSeq(m)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.byID[id]; ok {
		if seq != f.seq {
			f.copies = append(f.copies, m)
		}
		return f, false
	}
	f := &flight{seq: seq}
	fs.byID[id] = f
	return f, true
}

// leave removes the attempt; when its result was stored, the copies of it
// received meanwhile are acknowledged.
func (fs *flights) leave(id string, f *flight, stored bool) {
	fs.mu.Lock()
	delete(fs.byID, id)
	copies := f.copies
	fs.mu.Unlock()
	if !stored {
		return
	}
	for _, m := range copies {
		_ = m.Ack()
	}
}

// streamSeq returns the stream sequence of a delivery, 0 when its
// metadata cannot be read.
func streamSeq(m message) uint64 {
	meta, err := m.Metadata()
	if err != nil {
		return 0
	}
	return meta.Sequence.Stream
}
