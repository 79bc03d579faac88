package pubsub

import "time"

// SetRelinkFirst sets how long after its connection broke h makes a new one
// itself (relinkFirst). Call it before h is used.
func SetRelinkFirst(h *Hub, d time.Duration) { h.relinkFirst = d }
