package fleet

import "time"

// benchLapse is the lapsed record's labels of a device whose last heartbeat was at.
func benchLapse(l *DeviceLabels, at time.Time) *DeviceLabels { l.LastBeat = &at; return l }
