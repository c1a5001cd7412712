package contracts

import (
	"sync"
	"time"
)

// zones keeps the time zones loaded so far, by IANA name: time.LoadLocation
// reads and parses the zone's file at every call.
var zones sync.Map // string → *time.Location

// LoadZone returns the time zone of an IANA name ("Europe/Berlin"), as
// time.LoadLocation does, loading each zone once. "" and "UTC" are UTC.
func LoadZone(name string) (*time.Location, error) {
	if z, ok := zones.Load(name); ok {
		return z.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}
