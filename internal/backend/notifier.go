package backend

import "sync"

// Notifier wakes any number of waiters at each change without ever
// blocking the goroutine that notifies. Its zero value is ready.
type Notifier struct {
	mu sync.Mutex
	ch chan struct{} // closed at the next Notify; made on first use
}

// Wait returns a channel closed at the next Notify. Call it again after
// each close.
func (n *Notifier) Wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

// Notify wakes every waiter.
func (n *Notifier) Notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
	}
	n.ch = make(chan struct{})
}
